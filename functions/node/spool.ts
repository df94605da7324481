import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Spool } from '../../core/dissemination/spooled-filter.ts';

const READ_CHUNK = 1024 * 1024;

/** A filter's output in a temporary file of its own under `directory`, removed once the send ends. */
export function fileSpool(directory = os.tmpdir()): Spool {
  return {
    async write(stream, signal) {
      const dir = await fs.promises.mkdtemp(path.join(directory, 'ecpds-spool-'));
      const file = path.join(dir, 'filtered');
      const dispose = () => fs.promises.rm(dir, { recursive: true, force: true });
      try {
        await pipeline(stream, fs.createWriteStream(file), { signal });
        const { size } = await fs.promises.stat(file);
        return { size, read: () => fs.createReadStream(file, { highWaterMark: READ_CHUNK }), dispose };
      } catch (error) {
        await dispose();
        throw error;
      }
    },
  };
}
