import type { SourceRange, SourceReader } from '../dissemination/send.ts';
import type { ObjectStore, StoredBytes } from './ports.ts';

/** A data file as its readers know it: its source, and the key of its stored copy once retrieved. */
export interface FileBytesRef {
  source: string;
  objectKey: string | null;
}

/**
 * The one rule for reading a data file's bytes, for movers, the portal and WIS2 alike: the stored
 * copy once the file was retrieved, never the source again; the source only for a file never
 * retrieved (read at each send, `ECPDS_RETRIEVAL=none`, or registered before retrieval existed).
 */
export function openFileBytes(
  store: ObjectStore | null,
  sources: SourceReader,
  file: FileBytesRef,
  signal: AbortSignal,
  range?: SourceRange,
): Promise<StoredBytes> {
  if (file.objectKey !== null) {
    if (!store) throw new Error('The file was retrieved into a store, but no store is configured here');
    return store.read(file.objectKey, signal, range);
  }
  return sources.open(file.source, signal, range);
}
