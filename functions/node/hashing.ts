import * as crypto from 'node:crypto';
import { nodeCryptoHashing } from '../runtime-hashing.ts';

/** Node's own hashing, imported rather than looked up: Node before 20.16 has no process.getBuiltinModule. */
export const nodeHashing = nodeCryptoHashing(crypto);
