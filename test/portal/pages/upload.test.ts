import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { dataTransfers } from '../../../db/schema.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, incomingUser } from '../support.ts';
import { fitsWidth, heading, keep, logIn, PHONE, submit, usePagesScene, WIDE } from './support.ts';

/**
 * The upload form of a folder's page in Chromium: sent in the background with its progress shown,
 * then the page confirming the file as it was registered; the same form without JavaScript; its
 * label clear of its file button on a phone. Screenshot: test/portal/portal-upload-390.png.
 */
const scene = usePagesScene();

const BROWSE = '/portal/data/BROWSE/';
const dataFileOf = async (target: string) =>
  (
    await scene.s.h.db
      .select()
      .from(dataTransfers)
      .where(and(eq(dataTransfers.destination, 'BROWSE'), eq(dataTransfers.target, target)))
  )[0]?.dataFileId;

describe('the upload form in Chromium', needs('chromium'), () => {
  it('shows the progress of an upload, then the file as it was registered', async () => {
    const page = await scene.open({ viewport: PHONE });
    await logIn(page, scene.base);
    await page.goto(`${scene.base}${BROWSE}`);
    // What the progress bar went through, reported as it changes (the page goes on to the confirmation).
    const seen: Array<{ value: number; max: number; hidden: boolean; status: string }> = [];
    await page.exposeBinding('progressSeen', (_source, state) => void seen.push(state));
    await page.evaluate(`{
      const bar = document.querySelector('form.upload progress');
      const status = document.querySelector('form.upload .upload-status');
      const report = () =>
        progressSeen({ value: bar.value, max: bar.max, hidden: bar.hidden, status: status.textContent });
      new MutationObserver(report).observe(bar, { attributes: true });
    }`);
    const bytes = bytesOf(6 * 1024 * 1024, 77);
    await page.getByLabel('Files to upload to this folder').setInputFiles({
      name: 'analysis.grib',
      mimeType: 'application/octet-stream',
      buffer: bytes,
    });
    await submit(page, () => page.getByRole('button', { name: 'Upload', exact: true }).click());

    expect(seen.some((s) => !s.hidden && s.value < s.max)).toBe(true);
    // To the end of the form's body: the file and the form's other fields around it.
    const last = seen.at(-1)!;
    expect([last.value === last.max, last.max >= bytes.length, last.hidden]).toEqual([true, true, false]);
    expect(last.status).toBe('Uploading: 100 %');
    const url = new URL(page.url());
    expect(url.pathname).toBe(BROWSE);
    expect(url.searchParams.getAll('uploaded')).toHaveLength(1);
    const confirmation = page.getByRole('status').filter({ hasText: 'Uploaded and registered' });
    const id = await dataFileOf('analysis.grib');
    expect(await confirmation.locator('p').innerText()).toBe('Uploaded and registered:');
    expect(await confirmation.locator('li').allInnerTexts()).toEqual([`analysis.grib, 6.0 MiB, data file ${id}`]);
    expect(await confirmation.locator('span[title]').getAttribute('title')).toBe('6,291,456 bytes');
    expect(await confirmation.getByRole('link', { name: 'analysis.grib' }).getAttribute('href')).toBe('analysis.grib');
    expect(await page.locator('tr[data-name="analysis.grib"] td.size').innerText()).toBe('6.0 MiB');
    expect(await fitsWidth(page)).toBe(true);
    await keep(page, 'portal-upload-390.png');

    // The same page opened again (a reload, a bookmark) confirms it again, and a receipt not signed
    // by this session confirms nothing.
    await page.goto(`${scene.base}${BROWSE}?uploaded=${id}.n.forged`);
    expect(await page.getByText('Uploaded and registered').count()).toBe(0);
    expect(scene.problems).toEqual([]);
  });

  it('shows why an upload was refused, and leaves the form ready for another', async () => {
    const capped = { login: 'capped', password: 'Capped-Pass-1' };
    await incomingUser(scene.s.h, scene.s.admin, { id: capped.login, password: capped.password, grant: ['put'] }, [
      'BROWSE',
    ]);
    await scene.s.h.ports.repos.portal.setOption(capped.login, 'portal.maxUploadBytes', '1000');
    const page = await scene.open({ viewport: PHONE });
    await logIn(page, scene.base, capped);
    await page.goto(`${scene.base}${BROWSE}`);
    await page.getByLabel('Files to upload to this folder').setInputFiles({
      name: 'too-big.bin',
      mimeType: 'application/octet-stream',
      buffer: bytesOf(3000, 78),
    });
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    const problem = page.getByRole('alert');
    await problem.waitFor();
    expect(await problem.innerText()).toBe('Upload quota exceeded');
    expect(await page.locator('form.upload progress').isHidden()).toBe(true);
    expect(await page.getByRole('button', { name: 'Upload', exact: true }).isEnabled()).toBe(true);
    expect(new URL(page.url()).pathname).toBe(BROWSE);
    expect(await dataFileOf('too-big.bin')).toBeUndefined();
  });

  it('uploads without JavaScript, the confirmation page the same', async () => {
    const page = await scene.open({ viewport: WIDE, javaScriptEnabled: false });
    await logIn(page, scene.base);
    await page.goto(`${scene.base}${BROWSE}forecasts/`);
    await page.getByLabel('Files to upload to this folder').setInputFiles([
      { name: 'plain one.txt', mimeType: 'text/plain', buffer: Buffer.from('first\n') },
      { name: 'plain two.txt', mimeType: 'text/plain', buffer: Buffer.from('second file\n') },
    ]);
    await submit(page, () => page.getByRole('button', { name: 'Upload', exact: true }).click());
    expect(await heading(page)).toBe('BROWSE/forecasts/');
    const confirmation = page.getByRole('status').filter({ hasText: 'uploaded and registered' });
    const [one, two] = [await dataFileOf('forecasts/plain one.txt'), await dataFileOf('forecasts/plain two.txt')];
    expect(await confirmation.locator('p').innerText()).toBe('2 files uploaded and registered:');
    expect(await confirmation.locator('li').allInnerTexts()).toEqual([
      `plain one.txt, 6 B, data file ${one}`,
      `plain two.txt, 12 B, data file ${two}`,
    ]);
    expect(await page.getByRole('link', { name: 'plain two.txt' }).first().getAttribute('href')).toBe(
      'plain%20two.txt',
    );
  });

  it('keeps the label and the file button apart, on a phone and on a wide screen', async () => {
    for (const viewport of [PHONE, WIDE]) {
      const page = await scene.open({ viewport });
      await logIn(page, scene.base);
      await page.goto(`${scene.base}${BROWSE}`);
      const label = (await page.locator('label[for="upload-file"]').boundingBox())!;
      const input = (await page.locator('#upload-file').boundingBox())!;
      const button = (await page.getByRole('button', { name: 'Upload', exact: true }).boundingBox())!;
      expect(overlap(label, input), `${viewport.width}px`).toBe(false);
      expect(overlap(input, button), `${viewport.width}px`).toBe(false);
      expect(input.x + input.width).toBeLessThanOrEqual(viewport.width);
      expect(await fitsWidth(page)).toBe(true);
    }
  });
});

type Box = { x: number; y: number; width: number; height: number };
const overlap = (a: Box, b: Box) =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
