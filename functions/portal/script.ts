/**
 * The listing page's script, served at /portal/assets/portal.js and named by the page's nonce. It
 * only adds to a page that works without it (progressive enhancement): times in the reader's own
 * zone (the UTC value stays on hover), sortable columns, the filter box, and the upload form sent
 * with its progress shown. Plain ES2020 in a string: no build step, nothing a bundler could rename.
 */
export const PORTAL_SCRIPT = `
(() => {
  'use strict';
  const pad = (n) => String(n).padStart(2, '0');
  const zone = (d) => {
    const part = new Intl.DateTimeFormat(undefined, { timeZoneName: 'short' })
      .formatToParts(d).find((p) => p.type === 'timeZoneName');
    return part ? ' ' + part.value : '';
  };
  for (const time of document.querySelectorAll('time[datetime]')) {
    const d = new Date(time.getAttribute('datetime'));
    if (Number.isNaN(d.getTime())) continue;
    time.textContent = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' +
      pad(d.getHours()) + ':' + pad(d.getMinutes()) + zone(d);
  }

  const table = document.querySelector('table.listing');
  if (table) {
    const body = table.tBodies[0];
    const rows = Array.from(body.rows).filter((r) => !r.classList.contains('up'));
    rows.forEach((r, i) => { r.dataset.order = String(i); });
    // The server's order is the names' (byte order). By size, folders come before files (their
    // sizes are counts of files, '1000+' past the count's cap), among themselves by that count.
    const size = (cell) => {
      if (cell.dataset.bytes !== undefined) return Number(cell.dataset.bytes);
      const files = cell.dataset.files;
      if (files === undefined) return -1;
      return parseInt(files, 10) + (files.endsWith('+') ? 0.5 : 0) - 1e9;
    };
    const keys = {
      name: (r) => Number(r.dataset.order),
      size: (r) => size(r.cells[1]),
      date: (r) => {
        const time = r.cells[2].querySelector('time');
        return time ? Date.parse(time.getAttribute('datetime')) : -Infinity;
      },
    };
    const headers = Array.from(table.querySelectorAll('th[data-sort]'));
    let sort = { key: 'name', direction: 1 };
    const show = () => {
      for (const th of headers) {
        if (th.dataset.sort === sort.key) th.setAttribute('aria-sort', sort.direction > 0 ? 'ascending' : 'descending');
        else th.removeAttribute('aria-sort');
      }
      const key = keys[sort.key];
      const sorted = rows.slice().sort((a, b) => {
        const x = key(a);
        const y = key(b);
        if (x !== y) return (x < y ? -1 : 1) * sort.direction;
        return Number(a.dataset.order) - Number(b.dataset.order);
      });
      for (const r of sorted) body.appendChild(r);
    };
    for (const th of headers) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'sort';
      button.textContent = th.textContent.trim();
      th.textContent = '';
      th.appendChild(button);
      button.addEventListener('click', () => {
        sort = sort.key === th.dataset.sort
          ? { key: sort.key, direction: -sort.direction }
          : { key: th.dataset.sort, direction: 1 };
        show();
      });
    }
    show();

    const filter = document.getElementById('filter');
    if (filter) {
      filter.closest('.filter').hidden = false;
      const count = document.getElementById('filter-count');
      const apply = () => {
        const text = filter.value.trim().toLowerCase();
        let shown = 0;
        for (const r of rows) {
          r.hidden = !r.dataset.name.toLowerCase().includes(text);
          if (!r.hidden) shown++;
        }
        count.textContent = text === '' ? '' : shown + ' of ' + rows.length + ' shown';
      };
      filter.addEventListener('input', apply);
      // The browser may have kept a value from before (back to the page).
      apply();
    }
  }

  const form = document.querySelector('form.upload');
  if (form) {
    const progress = form.querySelector('progress');
    const status = form.querySelector('.upload-status');
    const problem = form.querySelector('.upload-problem');
    const submit = form.querySelector('button[type=submit]');
    const fail = (text) => {
      progress.hidden = true;
      status.textContent = '';
      problem.textContent = text;
      problem.hidden = false;
      submit.disabled = false;
    };
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const xhr = new XMLHttpRequest();
      xhr.open('POST', form.action);
      let shown = -1;
      xhr.upload.addEventListener('progress', (e) => {
        if (!e.lengthComputable) return;
        progress.max = e.total;
        progress.value = e.loaded;
        const percent = Math.floor((100 * e.loaded) / e.total);
        if (percent !== shown) status.textContent = 'Uploading: ' + (shown = percent) + ' %';
      });
      // The answer follows the form's redirect to the folder's page, which confirms the files.
      xhr.addEventListener('load', () => {
        if (xhr.status >= 200 && xhr.status < 300) {
          status.textContent = 'Uploaded.';
          location.assign(xhr.responseURL);
        } else fail(xhr.responseText.trim() || 'The upload failed (' + xhr.status + ').');
      });
      xhr.addEventListener('error', () => fail('The upload failed: the connection was lost.'));
      problem.hidden = true;
      progress.value = 0;
      progress.hidden = false;
      submit.disabled = true;
      status.textContent = 'Uploading: 0 %';
      xhr.send(new FormData(form));
    });
  }
})();
`;
