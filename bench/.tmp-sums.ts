import { randomFillSync } from 'node:crypto';
import fs from 'node:fs';
import { summing } from '../core/retrieval/digests.ts';
import { parallelSumming } from '../functions/node/parallel-sums.ts';
import { directoryStore } from '../functions/store/directory-store.ts';
const file = '/work/scratch/big.bin';
const SIZE = 1 << 30;
if (!fs.existsSync(file)) { const fd = fs.openSync(file, 'w'); const b = Buffer.alloc(1 << 24); for (let i = 0; i < 64; i++) fs.writeSync(fd, randomFillSync(b)); fs.closeSync(fd); }
const store = directoryStore('/work/scratch/store');
const modes = process.argv.slice(2);
for (const mode of modes) {
  const t = performance.now();
  const src = fs.createReadStream(file, { highWaterMark: 1 << 20 });
  const s = mode === 'par' ? parallelSumming()(src, SIZE) : mode === 'none' ? { stream: src, sums: async () => null } : summing(src);
  await store.write(`k-${mode}-${Date.now()}`, s.stream, new AbortController().signal, SIZE);
  await s.sums();
  console.log(mode, ((performance.now() - t) / 1000).toFixed(2), 's');
}
