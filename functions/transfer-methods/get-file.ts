import type { FetchedFile } from '../../core/dissemination/methods.ts';
import { fetchFailure } from './sized-source.ts';

/**
 * A file read over HTTP (a Source host's, at retrieval): the whole body asked for as is (`identity`),
 * anything but a 200 refused with the server's status, the size from Content-Length when it gives one.
 */
export async function getFile(
  send: typeof fetch,
  url: URL,
  headers: Record<string, string>,
  signal: AbortSignal,
  label: string,
): Promise<FetchedFile> {
  let response: Response;
  try {
    response = await send(url, { headers: { ...headers, 'accept-encoding': 'identity' }, signal, redirect: 'manual' });
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw new Error(`${label} failed: ${fetchFailure(error)}`);
  }
  if (response.status !== 200 || !response.body) {
    await response.body?.cancel();
    throw new Error(`${label} failed: ${response.status} ${response.statusText}`.trim());
  }
  const length = response.headers.get('content-length');
  const size = length !== null && /^\d+$/.test(length) ? Number(length) : null;
  return { size, stream: response.body as unknown as AsyncIterable<Uint8Array> };
}
