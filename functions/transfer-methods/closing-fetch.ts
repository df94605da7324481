/**
 * Node's fetch with each connection closed once its answer has been read (`Connection: close`):
 * an upload's connection is never kept idle for reuse, so the connections a host sees are the
 * sends in flight, which its maxConnections bounds across every mover (SFTP and FTP sessions kept
 * for reuse are counted instead; see host-sessions.ts). Workers' fetch is given as it is.
 */
export const closingFetch: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
  headers.set('connection', 'close');
  return fetch(input, { ...init, headers });
};
