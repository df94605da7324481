/** The console's only assets, served by the app itself: no external fonts, scripts or styles. */
export const CSS =
  `
:root { color-scheme: light; --fg:#1b1f23; --muted:#57606a; --line:#d0d7de; --accent:#0a58ca; ` +
  `--warn:#9a6700; --bad:#b42318; --ok:#1a7f37; }
* { box-sizing: border-box; }
body { margin:0; font: 16px/1.5 system-ui, sans-serif; color: var(--fg); }
header { display:flex; flex-wrap:wrap; gap:.5rem 1.5rem; align-items:center; ` +
  `padding:.75rem 1rem; border-bottom:1px solid var(--line); }
header strong { font-size:1.1rem; }
nav ul { display:flex; flex-wrap:wrap; gap:.25rem 1rem; list-style:none; margin:0; padding:0; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
a { color: var(--accent); }
a:focus, button:focus, input:focus, select:focus, textarea:focus { outline: 3px solid #80b3ff; outline-offset: 1px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align:left; padding:.4rem .5rem; border-bottom:1px solid var(--line); vertical-align: top; }
.table-wrap { overflow-x:auto; position:relative; }
label { display:block; font-weight:600; margin-top:.75rem; }
input[type=text], input[type=password], input[type=number], select, textarea { width:100%; ` +
  `max-width:32rem; padding:.45rem; font:inherit; border:1px solid var(--line); border-radius:4px; }
textarea { min-height: 6rem; font-family: ui-monospace, monospace; }
fieldset { border:1px solid var(--line); border-radius:4px; margin-top:1rem; }
.checks { display:grid; grid-template-columns: repeat(auto-fill, minmax(15rem, 1fr)); gap:.25rem 1rem; }
.checks label { font-weight: normal; margin: 0; }
button, .button { display:inline-block; margin-top:1rem; padding:.5rem 1rem; font:inherit; ` +
  `border:1px solid var(--accent); border-radius:4px; background: var(--accent); color:#fff; ` +
  `cursor:pointer; text-decoration:none; }
button.secondary, .button.secondary { background:#fff; color: var(--accent); }
.button.danger-link { background:#fff; color: var(--bad); border-color: var(--bad); }
.actions { display:flex; flex-wrap:wrap; gap:.5rem 1rem; align-items:center; margin-top:1rem; }
.actions button, .actions .button { margin-top:0; }
td select { width:auto; max-width:100%; }
button.danger { background: var(--bad); border-color: var(--bad); }
form.inline { display:inline; }
form.inline button { margin-top:0; padding:.2rem .6rem; }
form.priority { display:flex; gap:.25rem; margin-top:.25rem; }
form.priority input[type=number] { width:4.5rem; padding:.2rem .4rem; }
.secret { font-family: ui-monospace, monospace; padding:.5rem; border:2px dashed var(--warn); word-break: break-all; }
.notice { padding:.5rem .75rem; border-left:4px solid var(--accent); background:#f3f7ff; }
.error { padding:.5rem .75rem; border-left:4px solid var(--bad); background:#fff4f2; }
.warning { color: var(--warn); }
.visually-hidden { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); white-space:nowrap; }
.report li.bad { color: var(--bad); }
.report li.ok { color: var(--ok); }
main:has(table.monitor, table.grid) { max-width: 80rem; }
.muted { color: var(--muted); }
.error-text { color: var(--bad); }
.ok-text { color: var(--ok); }
.filters { display:flex; flex-wrap:wrap; gap:.5rem 1rem; align-items:flex-end; margin-bottom:1rem; }
.filters label { margin-top:0; }
.filters button { margin-top:0; }
table.monitor td { font-size:.95rem; }
.row-actions { display:flex; flex-wrap:wrap; gap:.25rem; }
.row-actions button { margin-top:0; padding:.2rem .6rem; }
.status { display:inline-block; padding:.1rem .5rem; border-radius:3px; font-weight:600; white-space:nowrap; }
.status small { font-weight:normal; }
.tone-ok { background:#dafbe1; color:#116329; }
.tone-busy { background:#ddf4ff; color:#0a3069; }
.tone-idle { background:#eef1f4; color:#24292f; }
.tone-warn { background:#fff8c5; color:#7d4e00; }
.tone-bad { background:#ffebe9; color:#a40e26; }
.tone-off { background:#eaeef2; color:#57606a; }
ul.counts { list-style:none; margin:0; padding:0; display:flex; flex-wrap:wrap; gap:.1rem .6rem; }
.count-done { color: var(--ok); }
.count-retr, .count-intr, .count-hold { color: var(--warn); }
.count-stop, .count-fail { color: var(--bad); }
.count-exec { color: var(--accent); }
dl.facts { display:grid; grid-template-columns: max-content 1fr; gap:.25rem 1rem; }
dl.facts dd { margin:0; }
tr.last-used td { background:#f6f8fa; }
ol.history { margin:.25rem 0 0; padding-left:1.2rem; font-size:.85rem; }
.charts { display:flex; flex-wrap:wrap; gap:1rem 2rem; }
figure.chart { margin:0; }
figure.chart figcaption { font-size:.85rem; color: var(--muted); }
table.grid th, table.grid td { white-space:nowrap; }
table.grid td a { display:block; margin:.1rem 0; }
.level { display:inline-block; min-width:1.6rem; padding:.1rem .4rem; border-radius:3px; text-align:center; ` +
  `text-decoration:none; color:#1b1f23; }
a.level:hover, a.level:focus { text-decoration:underline; }
.level-1 { background:#2da44e; color:#fff; }
.level-2 { background:#a6e3a1; }
.level-3 { background:#fff3a3; }
.level-4 { background:#ffb35c; }
.level-5 { background:#cf222e; color:#fff; }
.level-none { background:#eaeef2; color:#57606a; }
ul.legend { list-style:none; padding:0; display:flex; flex-wrap:wrap; gap:.25rem 1.25rem; font-size:.9rem; }
ul.inline-list { list-style:none; margin:0; padding:0; display:flex; flex-wrap:wrap; gap:.1rem 1rem; }
.swatch { display:inline-block; width:.8rem; height:.8rem; vertical-align:middle; border-radius:2px; }
.swatch-down { background:#0a58ca; }
.swatch-up { background:#bc4c00; }
svg.traffic { display:block; }
table.options td form { display:flex; flex-wrap:wrap; gap:.25rem .5rem; align-items:center; }
table.options td input[type=text] { flex:1 1 12rem; min-width:8rem; }
table.options td button { margin-top:0; padding:.25rem .75rem; }
table.options td p { flex-basis:100%; margin:.25rem 0 0; }
tr.refused td, tr.refused th { background:#fff4f2; }
`;

export const SCRIPT =
  `
(() => {
  const copy = document.querySelector('[data-copy]');
  if (copy) copy.addEventListener('click', async () => {
    const text = document.getElementById(copy.dataset.copy).textContent.trim();
    try { await navigator.clipboard.writeText(text); copy.textContent = 'Copied'; } ` +
  `catch { copy.textContent = 'Select and copy the text'; }
  });
  const editor = document.getElementById('expressions');
  const report = document.getElementById('expressions-report');
  const namesEl = document.getElementById('service-names');
  if (!editor || !report || !namesEl) return;
  const names = JSON.parse(namesEl.textContent);
  const render = () => {
    report.replaceChildren();
    for (const line of editor.value.split('\\n').map((l) => l.trim()).filter(Boolean)) {
      const li = document.createElement('li');
      try {
        const re = new RegExp('^(?:' + line + ')$', 'u');
        const granted = names.filter((n) => re.test(n));
        li.className = 'ok';
        li.textContent = line + ' → ' + (granted.length ? granted.join(', ') : 'grants no service');
        if (granted.includes('showSensitiveInfo') && line !== 'showSensitiveInfo') {
          const warn = document.createElement('strong');
          warn.className = 'warning';
          warn.textContent = ' — also grants showSensitiveInfo';
          li.append(warn);
        }
      } catch (e) {
        li.className = 'bad';
        li.textContent = line + ' → does not compile: ' + e.message;
      }
      report.append(li);
    }
  };
  editor.addEventListener('input', render);
  render();
})();
`;
