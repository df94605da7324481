import type { ObjectStore } from '../../core/store/ports.ts';
import type { StoreConfig } from './config.ts';
import { directoryStore } from './directory-store.ts';
import { s3ObjectStore } from './s3-store.ts';

/** The store a configuration names: a local directory, or an S3-compatible bucket. */
export function openStore(config: StoreConfig): ObjectStore {
  if (config.kind === 's3') return s3ObjectStore(config);
  if (!config.path) throw new Error('The local store needs its directory');
  return directoryStore(config.path);
}
