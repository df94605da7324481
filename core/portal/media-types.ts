/** Types a browser may show in place; anything else is downloaded (HTML above all: it is never served as such). */
const SHOWN_TYPES: Record<string, string> = {
  txt: 'text/plain; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  json: 'application/json',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
};

/**
 * The data formats WIS2 names (WMO's media types for its notification links, IANA's otherwise): no browser shows
 * them in place, so they are downloaded as the rest are, but a WIS2 message says what the link gives.
 */
const DATA_TYPES: Record<string, string> = {
  bufr: 'application/bufr',
  bufr4: 'application/bufr',
  grib: 'application/grib',
  grib2: 'application/grib',
  grb: 'application/grib',
  grb2: 'application/grib',
  nc: 'application/netcdf',
  nc4: 'application/netcdf',
  h5: 'application/x-hdf5',
  hdf5: 'application/x-hdf5',
  geojson: 'application/geo+json',
  zip: 'application/zip',
  gz: 'application/gzip',
  bz2: 'application/x-bzip2',
  xz: 'application/x-xz',
  zst: 'application/zstd',
  tar: 'application/x-tar',
};

/** The media type the portal serves a file with (and a WIS2 message announces), by its name's extension. */
export function contentTypeOf(path: string) {
  const extension = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase() ?? '';
  return SHOWN_TYPES[extension] ?? DATA_TYPES[extension] ?? 'application/octet-stream';
}
