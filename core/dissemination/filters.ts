/**
 * The host's compression filter (`filterName`), as the reference's mover chooses it
 * (`MoverServer.put`, `StreamManagerImp.getFilters`): for a file whose original name matches
 * `ectrans.filterpattern` (all by default) and whose size is at least `ectrans.filterMinimumSize`
 * (0 by default). The delivered name gets the filter's extension.
 */
export interface FilterOptions {
  /** Matched against the whole original file name. */
  pattern: RegExp;
  minimumSize: number;
}

/** The filters the reference knows, with the extension each adds to the delivered name. */
const EXTENSIONS: Record<string, string> = {
  gzip: '.gz',
  zip: '.zip',
  lzma: '.lzma',
  bzip2a: '.bz2',
  lbzip2: '.bz2',
  lz4: '.lz4',
  snappy: '.sz',
  zstd: '.zst',
};

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** A size as `1024`, `10k`, `10KB`, `2 MB`, `1G`; anything else is `fallback`. */
export function readByteSize(value: string | undefined, fallback: number): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$/i.exec(value ?? '');
  if (!match) return fallback;
  return Math.round(Number(match[1]) * UNITS[match[2]!.toLowerCase()]!);
}

export function filterOptions(all: ReadonlyMap<string, string>): FilterOptions {
  const text = all.get('ectrans.filterpattern')?.trim();
  let pattern = /^(?:.*)$/s;
  if (text && text !== 'none') {
    try {
      pattern = new RegExp(`^(?:${text})$`);
    } catch {
      // A pattern that does not compile filters nothing rather than everything.
      pattern = /(?!)/;
    }
  }
  return { pattern, minimumSize: readByteSize(all.get('ectrans.filterMinimumSize'), 0) };
}

/**
 * The filter for this file, or null for none. `filterName` may hold size limits as the
 * reference reads them: `gzip:1000000:none` filters files up to 1,000,000 bytes with gzip.
 */
export function chooseFilter(
  filterName: string | null,
  options: FilterOptions,
  originalName: string,
  size: number,
): string | null {
  if (!options.pattern.test(originalName) || size < options.minimumSize) return null;
  const chosen = filterFor(filterName ?? '', size);
  return chosen === '' || chosen.toLowerCase() === 'none' ? null : chosen.toLowerCase();
}

function filterFor(filterName: string, size: number): string {
  const parts = filterName.split(':').map((part) => part.trim());
  for (let at = 0; at < parts.length; at += 2) {
    const limit = parts[at + 1];
    if (limit === undefined) return parts[at]!;
    if (!/^\d+$/.test(limit)) throw new Error(`Bad syntax for filter: ${filterName}`);
    if (size <= Number(limit)) return parts[at]!;
  }
  return 'none';
}

/** The extension a filter adds to the delivered name (`.gz` for gzip). */
export function filterExtension(name: string): string {
  const extension = EXTENSIONS[name.toLowerCase()];
  if (extension === undefined) throw new Error(`Filter ${name} not supported`);
  return extension;
}

/** Compressors by filter name, each streaming: the mover's runtime provides them (Node's zlib). */
export type FilterCodecs = Readonly<Record<string, (source: AsyncIterable<Uint8Array>) => AsyncIterable<Uint8Array>>>;

/** The methods that compress as they write (deliverFile with the filter). */
const STREAM_FILTERED = new Set(['sftp', 'ftp', 'ftps', 'file']);
/** The methods that announce the size first: the filter's output is spooled (see spooled-filter.ts). */
const SPOOL_FILTERED = new Set(['s3', 'http', 'azure', 'webdav', 'r2']);

/**
 * The filter this transfer's delivery applies, with its compressor and how the method takes it,
 * or null. A filter the host names that this mover cannot apply fails the attempt, as it does in
 * the reference; so does one through a method that needs a spool where the mover has none.
 */
export function deliveryFilter(
  codecs: FilterCodecs | undefined,
  method: string,
  host: { filterName?: string | null },
  options: FilterOptions,
  file: { source: string; size: number },
  canSpool = false,
) {
  const spooled = SPOOL_FILTERED.has(method);
  if (!spooled && !STREAM_FILTERED.has(method)) return null;
  const original = file.source.replace(/[?#].*$/, '').replace(/\/+$/, '');
  const name = chooseFilter(host.filterName ?? null, options, original.slice(original.lastIndexOf('/') + 1), file.size);
  if (name === null) return null;
  filterExtension(name);
  const transform = codecs?.[name];
  if (!transform) throw new Error(`Filter ${name} not supported`);
  if (spooled && !canSpool) throw new Error(`Filter ${name} not supported with ${method} on this DataMover`);
  return { name, transform, spooled };
}
