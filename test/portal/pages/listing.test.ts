import fs from 'node:fs';
import { sql } from 'drizzle-orm';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { exactBytes, shortBytes } from '../../../functions/portal/format.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf } from '../support.ts';
import {
  FILES,
  FOLDER,
  fitsWidth,
  heading,
  keep,
  logIn,
  PHONE,
  shownNames,
  submit,
  usePagesScene,
  WIDE,
} from './support.ts';

/**
 * A folder's page in Chromium as its readers use it: short sizes with the exact bytes on hover,
 * times in the reader's own zone with the UTC time on hover, columns sorted by a click, a filter
 * box in a large folder, folders with their newest time and their files counted; and all of it
 * readable without JavaScript, the links plain `<a href>` links. Screenshots at 1280 and 390 px:
 * test/portal/portal-folder-*.png (files), test/portal/portal-folders-*.png (folders).
 */
const scene = usePagesScene();

const FORECASTS = ['msl_00.grib', 't2m_00.grib', 't2m_12.grib'];

describe('sizes', () => {
  it('are written in binary units, exact in bytes for the hover', () => {
    expect([0, 512, 1023, 1024, 1536, 2_621_440, 3 * 1024 ** 3 + 1].map(shortBytes)).toEqual([
      '0 B',
      '512 B',
      '1023 B',
      '1.0 KiB',
      '1.5 KiB',
      '2.5 MiB',
      '3.0 GiB',
    ]);
    expect(exactBytes(3 * 1024 ** 3 + 1)).toBe('3,221,225,473 bytes');
    expect(exactBytes(999)).toBe('999 bytes');
  });
});

describe("a folder's page in Chromium", needs('chromium'), () => {
  it('shows each size short, its exact bytes in the title the hover shows', async () => {
    const page = await scene.open({ viewport: WIDE });
    await logIn(page, scene.base);
    await page.goto(`${scene.base}${FOLDER}`);
    const size = (name: string) => page.locator(`tr[data-name="${name}"] td.size`);
    expect(await size('msl_00.grib').innerText()).toBe('2.5 MiB');
    expect(await size('msl_00.grib').getAttribute('title')).toBe('2,621,440 bytes');
    expect(await size('t2m_12.grib').innerText()).toBe('1.5 KiB');
    expect(await size('t2m_12.grib').getAttribute('title')).toBe('1,536 bytes');
    expect(await size('t2m_00.grib').innerText()).toBe('512 B');
    expect(await size('t2m_00.grib').getAttribute('title')).toBe('512 bytes');
    await keep(page, 'portal-folder-1280.png');
  });

  it('runs only its own script, named by a nonce of that answer alone', async () => {
    const page = await scene.open({ viewport: WIDE });
    await logIn(page, scene.base);
    const nonces: string[] = [];
    for (let i = 0; i < 2; i++) {
      const response = (await page.goto(`${scene.base}${FOLDER}`))!;
      const policy = response.headers()['content-security-policy']!;
      const nonce = /script-src 'nonce-([^']+)';/.exec(policy)?.[1];
      expect(policy).not.toMatch(/unsafe|script-src[^;]*'self'/);
      expect(await response.text()).toContain(`<script src="/portal/assets/portal.js" nonce="${nonce}" defer="">`);
      nonces.push(nonce!);
    }
    expect(new Set(nonces).size).toBe(2);
    // The script ran: the headers are buttons.
    expect(await page.getByRole('button', { name: 'Size', exact: true }).count()).toBe(1);
  });

  it("shows times in the reader's time zone, the UTC time on hover", async () => {
    for (const [timezoneId, shown] of [
      ['Asia/Tokyo', '2026-03-02 03:30 GMT+9'],
      ['America/New_York', '2026-03-01 13:30 EST'],
      ['UTC', '2026-03-01 18:30 UTC'],
    ]) {
      const page = await scene.open({ viewport: WIDE, timezoneId });
      await logIn(page, scene.base);
      await page.goto(`${scene.base}${FOLDER}`);
      const time = page.locator('tr[data-name="t2m_00.grib"] time');
      expect(await time.innerText(), timezoneId).toBe(shown);
      expect(await time.getAttribute('title')).toBe('2026-03-01 18:30:00 UTC');
      expect(await time.getAttribute('datetime')).toBe('2026-03-01T18:30:00Z');
    }
  });

  it('sorts by name, size and date when a column header is clicked, and back the other way', async () => {
    const page = await scene.open({ viewport: WIDE });
    await logIn(page, scene.base);
    await page.goto(`${scene.base}${FOLDER}`);
    const sortedBy = (column: string) => page.locator(`th[data-sort="${column}"]`).getAttribute('aria-sort');
    const click = (name: string) => page.getByRole('button', { name, exact: true }).click();
    expect(await shownNames(page)).toEqual(FORECASTS);
    expect(await sortedBy('name')).toBe('ascending');
    await click('Size');
    expect(await shownNames(page)).toEqual(['t2m_00.grib', 't2m_12.grib', 'msl_00.grib']);
    expect([await sortedBy('size'), await sortedBy('name')]).toEqual(['ascending', null]);
    await click('Size');
    expect(await shownNames(page)).toEqual(['msl_00.grib', 't2m_12.grib', 't2m_00.grib']);
    expect(await sortedBy('size')).toBe('descending');
    await click('Modified');
    expect(await shownNames(page)).toEqual(['t2m_12.grib', 'msl_00.grib', 't2m_00.grib']);
    await click('Modified');
    expect(await shownNames(page)).toEqual(['t2m_00.grib', 'msl_00.grib', 't2m_12.grib']);
    await click('Name');
    expect(await shownNames(page)).toEqual(FORECASTS);
    await click('Name');
    expect(await shownNames(page)).toEqual([...FORECASTS].reverse());
    // The way up stays first, whatever the order.
    expect(await page.locator('table.listing tbody tr').first().locator('td').first().innerText()).toBe('../');
  });

  it('filters a large folder by name, and offers no filter in a small one', async () => {
    const page = await scene.open({ viewport: PHONE });
    await logIn(page, scene.base);
    await page.goto(`${scene.base}/portal/data/BROWSE/observations/`);
    const filter = page.getByLabel('Filter by name');
    expect(await filter.isVisible()).toBe(true);
    expect(await shownNames(page)).toHaveLength(12);
    await filter.fill('STATION_1');
    expect(await shownNames(page)).toEqual(['station_10.csv', 'station_11.csv', 'station_12.csv']);
    expect(await page.locator('#filter-count').innerText()).toBe('3 of 12 shown');
    expect(await fitsWidth(page)).toBe(true);
    await keep(page, 'portal-filter-390.png');
    await filter.fill('');
    expect(await shownNames(page)).toHaveLength(12);
    await page.goto(`${scene.base}${FOLDER}`);
    expect(await page.locator('#filter').count()).toBe(0);
  });

  it('shows a folder with the time of its newest file', async () => {
    const page = await scene.open({ viewport: PHONE, timezoneId: 'UTC' });
    await logIn(page, scene.base);
    await page.goto(`${scene.base}/portal/data/BROWSE/`);
    const newest = (name: string) => page.locator(`tr[data-name="${name}"] time`).getAttribute('datetime');
    expect(await newest('forecasts')).toBe('2026-03-01T18:30:00Z');
    expect(await newest('observations')).toBe('2026-02-12T12:00:00Z');
    expect(await page.locator('tr[data-name="forecasts"] td.name a').innerText()).toBe('forecasts/');
    expect(await fitsWidth(page)).toBe(true);
    await page.goto(`${scene.base}${FOLDER}`);
    expect(await fitsWidth(page)).toBe(true);
    await keep(page, 'portal-folder-390.png');
  });

  it('shows a folder with its files counted, up to 1,000, and sorts folders by their counts', async () => {
    const size = (page: Page, name: string) => page.locator(`tr[data-name="${name}"] td.size`);
    const first = await scene.open({ viewport: PHONE });
    await logIn(first, scene.base);
    expect(await size(first, 'BROWSE').innerText()).toBe(`${FILES.length} files`);
    // A folder of more files than the page counts.
    await scene.s.h.db.execute(sql`
      with f as (
        insert into data_files (source, size, registered_by, created_at)
        select '/archive/' || g, 100, 'test', timestamptz '2026-01-05T00:00:00Z' from generate_series(1, 1001) g
        returning id, source)
      insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at)
      select id, 'BROWSE', 'archive/' || substr(source, 10) || '.csv', 99, 'DONE', now() - interval '1 hour',
        now() + interval '1 day'
      from f`);
    for (const [viewport, width] of [
      [PHONE, 390],
      [WIDE, 1280],
    ] as const) {
      const page = await scene.open({ viewport, timezoneId: 'UTC' });
      await logIn(page, scene.base);
      expect(await size(page, 'BROWSE').innerText()).toBe('1,000+ files');
      await page.goto(`${scene.base}/portal/data/BROWSE/`);
      expect(await size(page, 'forecasts').innerText()).toBe('3 files');
      expect(await size(page, 'forecasts').getAttribute('title')).toBe('3 files here and below');
      expect(await size(page, 'observations').innerText()).toBe('12 files');
      expect((await size(page, 'archive').innerText()).replace(/\s+/, ' ')).toBe('1,000+ files');
      expect(await size(page, 'archive').getAttribute('title')).toBe('More than 1,000 files here and below');
      expect(await size(page, 'README.txt').innerText()).toBe('700 B');
      const click = (name: string) => page.getByRole('button', { name, exact: true }).click();
      await click('Size');
      expect(await shownNames(page)).toEqual(['forecasts/', 'observations/', 'archive/', 'README.txt']);
      await click('Size');
      expect(await shownNames(page)).toEqual(['README.txt', 'archive/', 'observations/', 'forecasts/']);
      await click('Name');
      expect(await shownNames(page)).toEqual(['README.txt', 'archive/', 'forecasts/', 'observations/']);
      // The table fits, its frame not scrolled sideways either.
      expect(await fitsWidth(page)).toBe(true);
      expect(await page.evaluate('(w => w.scrollWidth <= w.clientWidth)(document.querySelector(".table-wrap"))')).toBe(
        true,
      );
      await keep(page, `portal-folders-${width}.png`);
    }
  });

  it('works without JavaScript: the listing, its plain links, downloads', async () => {
    const page = await scene.open({ viewport: PHONE, javaScriptEnabled: false, timezoneId: 'Asia/Tokyo' });
    await logIn(page, scene.base);
    await submit(page, () => page.getByRole('link', { name: 'BROWSE/' }).click());
    await submit(page, () => page.getByRole('link', { name: 'forecasts/' }).click());
    await submit(page, () => page.getByRole('link', { name: '2026-11-27/' }).click());
    expect(await heading(page)).toBe('BROWSE/forecasts/2026-11-27/');
    expect(await shownNames(page)).toEqual(FORECASTS);
    // The server's own words: UTC, the headers plain text, the filter not offered.
    expect(await page.locator('tr[data-name="t2m_00.grib"] time').innerText()).toBe('2026-03-01 18:30 UTC');
    expect(await page.locator('thead button').count()).toBe(0);
    const hrefs = await page.locator('table.listing a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    expect(hrefs).toEqual(['../', 'msl_00.grib', 't2m_00.grib', 't2m_12.grib']);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 't2m_12.grib' }).click(),
    ]);
    const index = FILES.findIndex((f) => f.target.endsWith('t2m_12.grib'));
    expect(fs.readFileSync(await download.path())).toEqual(bytesOf(FILES[index]!.size, index + 1));
    expect(await fitsWidth(page)).toBe(true);
    expect(scene.problems).toEqual([]);
  });
});
