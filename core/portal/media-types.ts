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

/** The media type the portal serves a file with, by its name's extension. */
export const contentTypeOf = (path: string) =>
  SHOWN_TYPES[/\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase() ?? ''] ?? 'application/octet-stream';
