import { pipeline } from 'node:stream';
import { createGzip } from 'node:zlib';
import type { FilterCodecs } from '../../core/dissemination/filters.ts';

/**
 * The filters a Node mover applies, streaming through zlib. Node 20's zlib has gzip but neither
 * zstd, bzip2 nor lzma: a host naming those fails its attempts with "Filter … not supported".
 * The pipeline passes a failing source on as the compressor's error, and a consumer that stops
 * reading closes the source.
 */
export const nodeFilters: FilterCodecs = {
  gzip: (source) => {
    const gzip = createGzip();
    pipeline(source, gzip, () => undefined);
    return gzip;
  },
};
