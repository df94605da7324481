import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { parallelSumming } from '../functions/node/parallel-sums.ts';
const file = '/work/scratch/big.bin';
for (const mode of process.argv.slice(2)) {
  const t = performance.now();
  const src = fs.createReadStream(file, { highWaterMark: 1 << 20 });
  if (mode === 'read') { for await (const _ of src); }
  else if (mode === 'md5' || mode === 'sha512') { const h = createHash(mode); for await (const c of src) h.update(c); h.digest(); }
  else { const s = parallelSumming()(src, 1 << 30); for await (const _ of s.stream); await s.sums(); }
  console.log(mode, ((performance.now() - t) / 1000).toFixed(2));
}
