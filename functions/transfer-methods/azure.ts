import { createHash } from 'node:crypto';
import type { ListedEntry } from '../../core/acquisition/selection.ts';
import { invalid } from '../../core/common/errors.ts';
import type { Delivered } from '../../core/dissemination/deliver.ts';
import { readFlag } from '../../core/dissemination/method-options.ts';
import type { HostConnection, OutgoingFile, TransferMethod } from '../../core/dissemination/methods.ts';
import { progressWatch } from '../../core/dissemination/progress-watch.ts';
import { listedBlobs } from './azure-list.ts';
import {
  AZURE_VERSION,
  type AzureBlob,
  type AzureSettings,
  azureBlob,
  azureListing,
  azureSettings,
  blockSizeFor,
  sharedKey,
} from './azure-target.ts';
import { partsOf, slicesOf, untilAborted } from './s3.ts';
import { queryOf, uniqueEntries, xmlValue } from './s3-wire.ts';
import { fetchFailure, requestBody, type SizedSource, sizedSource } from './sized-source.ts';
import { answerText, type UploadWatch, uploadWatch } from './upload-watch.ts';

/** How the requests are authorised: Shared Key signing, or a SAS token added to each URL. */
type Credentials = { account: string; key: string } | { sas: URLSearchParams };

export interface AzureDependencies {
  fetch?: typeof fetch;
  /** The most entries a List Blobs page holds (maxresults); the service's default (5000) when none. */
  listPageSize?: number;
}

/**
 * The `azure` method: the file as a block blob, over the Blob service's REST API and fetch (the
 * same code on Node and Workers). Its bytes go as uncommitted blocks (Put Block: one for a file
 * under `azure.multipartSize`, else blocks of `azure.blockSize`, `azure.numBuffers` at once), and
 * the blob takes them only with Put Block List. Blob storage has no rename: the commit is what a
 * rename is elsewhere. Until it, the blob's name shows what it held before (or nothing), so
 * nothing half-written ever carries the final name; it is sent only once the source ended at its
 * registered size and the database confirmed the attempt still owns the transfer. Each send names
 * its blocks with an identifier of its own, so a stale attempt's blocks are never committed with
 * them; uncommitted blocks are discarded by the next commit, or by the service after a week.
 * Requests the server stops reading, or does not answer, for `ectrans.streamTimeout` are aborted.
 */
export function azureMethod(dependencies: AzureDependencies = {}): TransferMethod {
  // Called unbound: Workers refuses a fetch invoked as a method of another object.
  const send: typeof fetch = dependencies.fetch ?? ((input, init) => fetch(input, init));
  return {
    async send(host, file, source, callerSignal) {
      callerSignal.throwIfAborted();
      const settings = azureSettings(host.options.raw, (v) => readFlag(v, false));
      const blob = azureBlob(host, file);
      const watch = uploadWatch(callerSignal, host.options);
      const sized = sizedSource(source, file.size, file.md5);
      try {
        const credentials = await credentialsOf(host, send, watch);
        const client = new AzureClient(blob, credentials, send, watch);
        return await client.upload(host, file, sized, settings);
      } catch (error) {
        // A request still under way ends here, its connection dropped, before the send does.
        watch.abort(error);
        throw (
          sized.failure() ?? (callerSignal.aborted || watch.signal.aborted ? (watch.signal.reason ?? error) : error)
        );
      } finally {
        watch.clear();
      }
    },
    async fetch(host, path, signal) {
      // The blob a send of `path` from the account's root would write: azure.containerName, or the first directory.
      const blob = azureBlob({ ...host, directory: '' }, { target: path, size: 0 });
      // Watches the credentials and the answer's headers only: the body is read at the retriever's pace.
      const watch = uploadWatch(signal, host.options);
      try {
        const credentials = await credentialsOf(host, send, watch);
        const response = await new AzureClient(blob, credentials, send, watch).call(
          'Get Blob',
          'GET',
          '',
          {},
          null,
          signal,
        );
        const length = response.headers.get('content-length');
        const size = length !== null && /^\d+$/.test(length) ? Number(length) : null;
        if (!response.body) throw new Error(`Azure Get Blob ${blob.label} failed: no body in the reply`);
        return { size, stream: response.body as unknown as AsyncIterable<Uint8Array> };
      } finally {
        watch.clear();
      }
    },
    async list(host, directory, signal) {
      signal.throwIfAborted();
      const where = azureListing(host, directory);
      // No ectrans.putTimeOut: a listing puts nothing. A server that stops answering still ends it.
      const watch = progressWatch(signal, { putTimeoutMs: null, streamTimeoutMs: host.options.streamTimeoutMs });
      try {
        const credentials = await credentialsOf(host, send, watch);
        const client = new AzureClient(where, credentials, send, watch);
        return await client.list(where.prefix, dependencies.listPageSize ?? null);
      } finally {
        watch.clear();
      }
    },
    async close() {},
  };
}

/**
 * As the reference decides: the host's login and password (account name and base64 key) for
 * Shared Key; else a SAS token fetched from `azure.sasUrl` with `azure.sasSubscriptionKey` as
 * the `Ocp-Apim-Subscription-Key` header.
 */
async function credentialsOf(host: HostConnection, send: typeof fetch, watch: UploadWatch): Promise<Credentials> {
  if (host.login !== '' && host.password) return { account: host.login, key: host.password };
  const sasUrl = host.options.raw.get('sasUrl')?.trim() ?? '';
  const subscriptionKey = host.options.raw.get('sasSubscriptionKey')?.trim() ?? '';
  if (sasUrl === '' || subscriptionKey === '') {
    throw invalid(
      'No Azure credentials: set the login and password (account name and key), ' +
        'or azure.sasUrl and azure.sasSubscriptionKey',
    );
  }
  const where = new URL(sasUrl);
  const label = `Azure SAS token from ${where.origin}${where.pathname}`;
  let response: Response;
  try {
    response = await send(where, {
      headers: { 'ocp-apim-subscription-key': subscriptionKey },
      signal: watch.signal,
      redirect: 'manual',
    });
  } catch (error) {
    if (watch.signal.aborted) throw watch.signal.reason ?? error;
    throw new Error(`${label} failed: ${fetchFailure(error)}`);
  }
  watch.moved();
  const text = (await answerText(response, watch.moved)).trim();
  if (!response.ok) throw new Error(`${label} failed: ${response.status} ${response.statusText}`);
  // A bare token (`sv=…&sig=…`, with or without `?`), or one as a JSON string.
  const token = text.startsWith('"') ? String(JSON.parse(text)) : text;
  const sas = new URLSearchParams(token.replace(/^\?/, ''));
  if (!sas.has('sig')) throw new Error(`${label} failed: the answer is no SAS token`);
  return { sas };
}

class AzureClient {
  constructor(
    private readonly blob: AzureBlob,
    private readonly credentials: Credentials,
    private readonly fetchFn: typeof fetch,
    private readonly watch: UploadWatch,
  ) {}

  async upload(
    host: HostConnection,
    file: OutgoingFile,
    sized: SizedSource,
    settings: AzureSettings,
  ): Promise<Delivered> {
    const blockSize = blockSizeFor(settings, file.size);
    const threads = file.size < settings.multipartSize ? 1 : settings.numBuffers;
    // Ids of one length for every send (the service requires it of a blob's blocks), unique to this one.
    const sendId = crypto.randomUUID().replace(/-/g, '').slice(0, 16);
    const blockId = (n: number) => btoa(`${sendId}-${String(n).padStart(6, '0')}`);
    const ids = await this.putBlocks(sized, blockSize, threads, blockId, settings.useMD5, file);
    if (sized.bytes() !== file.size) throw sized.failure() ?? invalid('Source changed size');
    const md5 = sized.md5();
    await file.attempt?.confirm();
    await this.commit(ids, settings.useMD5 ? md5 : null);
    if (!host.options.ignoreCheck) await this.checkSize(sized.bytes());
    return { sent: sized.bytes(), md5 };
  }

  /** Blocks of `blockSize` bytes (the last one shorter), up to `threads` in flight; their ids in order. */
  private async putBlocks(
    sized: SizedSource,
    blockSize: number,
    threads: number,
    blockId: (n: number) => string,
    useMD5: boolean,
    file: OutgoingFile,
  ): Promise<string[]> {
    const ids: string[] = [];
    const inFlight = new Set<Promise<void>>();
    const blocks = new AbortController();
    const stop = () => blocks.abort(this.watch.signal.reason);
    this.watch.signal.addEventListener('abort', stop, { once: true });
    let failure: { error: unknown } | null = null;
    let n = 0;
    try {
      for await (const block of untilAborted(partsOf(sized.chunks, blockSize), blocks.signal)) {
        const id = blockId(n++);
        ids.push(id);
        file.attempt?.throwIfLapsing();
        const put = this.putBlock(id, ids.length, block, useMD5, blocks.signal).catch((error: unknown) => {
          failure ??= { error };
          blocks.abort(error);
        });
        inFlight.add(put);
        void put.finally(() => inFlight.delete(put));
        while (inFlight.size >= threads && !failure) await Promise.race(inFlight);
        if (failure) break;
      }
    } catch (error) {
      failure ??= { error };
    } finally {
      await Promise.allSettled(inFlight);
      this.watch.signal.removeEventListener('abort', stop);
    }
    if (failure) throw (failure as { error: unknown }).error;
    return ids;
  }

  /** The blobs under `prefix` in the container, one level deep, over every page of List Blobs. */
  async list(prefix: string, pageSize: number | null): Promise<ListedEntry[]> {
    const entries: ListedEntry[] = [];
    let marker: string | null = null;
    do {
      const query = queryOf({
        restype: 'container',
        comp: 'list',
        prefix,
        delimiter: '/',
        maxresults: pageSize === null ? null : String(pageSize),
        marker,
      });
      const response = await this.call('List Blobs', 'GET', query, {}, null, this.watch.signal);
      const page = await this.replyText('List Blobs', response);
      entries.push(...listedBlobs(page, prefix));
      marker = xmlValue(page, 'NextMarker') || null;
    } while (marker !== null);
    return uniqueEntries(entries);
  }

  /** A whole answer (a page of a listing can be more than a failure's reason keeps); the abort's reason on abort. */
  private async replyText(what: string, response: Response) {
    try {
      const text = await response.text();
      this.watch.moved();
      return text;
    } catch (error) {
      if (this.watch.signal.aborted) throw this.watch.signal.reason ?? error;
      throw this.failed(what, fetchFailure(error));
    }
  }

  private async putBlock(id: string, n: number, block: Uint8Array, useMD5: boolean, signal: AbortSignal) {
    const headers: Record<string, string> = { 'content-length': String(block.byteLength) };
    if (useMD5) headers['content-md5'] = createHash('md5').update(block).digest('base64');
    const query = `comp=block&blockid=${encodeURIComponent(id)}`;
    const body = requestBody(slicesOf(block), block.byteLength, { signal, moved: this.watch.moved });
    const response = await this.call(`Put Block ${n}`, 'PUT', query, headers, body, signal);
    await response.body?.cancel();
  }

  private async commit(ids: string[], md5: string | null) {
    const latest = ids.map((id) => `<Latest>${id}</Latest>`).join('');
    const xml = `<?xml version="1.0" encoding="utf-8"?><BlockList>${latest}</BlockList>`;
    const body = new TextEncoder().encode(xml);
    const headers: Record<string, string> = {
      'content-length': String(body.byteLength),
      'content-type': 'application/xml',
      'x-ms-blob-content-type': 'application/octet-stream',
    };
    if (md5 !== null) headers['x-ms-blob-content-md5'] = btoa(String.fromCharCode(...hexBytes(md5)));
    const response = await this.call('Put Block List', 'PUT', 'comp=blocklist', headers, body, this.watch.signal);
    await response.body?.cancel();
  }

  /** With `azure.ignoreCheck` false: the committed blob must have the size sent, or it is removed. */
  private async checkSize(sent: number) {
    const response = await this.call('Get Blob Properties', 'HEAD', '', {}, null, this.watch.signal);
    const size = Number(response.headers.get('content-length'));
    if (size !== sent) {
      await this.call('Delete Blob', 'DELETE', '', {}, null, AbortSignal.timeout(30_000))
        .then((r) => r.body?.cancel())
        .catch(() => undefined);
      throw invalid(`Transfer aborted at ${sent === 0 ? 0 : Math.floor((100 * size) / sent)}%`);
    }
  }

  /** A request that must succeed; network failures and error replies both say what failed. */
  async call(
    what: string,
    method: string,
    query: string,
    headers: Record<string, string>,
    body: RequestInit['body'],
    signal: AbortSignal,
  ): Promise<Response> {
    const url = new URL(this.blob.url);
    url.search = query;
    const all: Record<string, string> = { 'x-ms-version': AZURE_VERSION, ...headers };
    if ('sas' in this.credentials) {
      for (const [name, value] of this.credentials.sas) url.searchParams.append(name, value);
    } else {
      all['x-ms-date'] = new Date().toUTCString();
      all.authorization = sharedKey(this.credentials.account, this.credentials.key, method, url, all);
    }
    let response: Response;
    try {
      // Node's fetch needs `duplex: 'half'` for a streamed body; Workers ignores it.
      const init = { method, headers: all, body, signal, duplex: 'half', redirect: 'manual' } as RequestInit;
      response = await this.fetchFn(url, init);
    } catch (error) {
      if (signal.aborted) throw signal.reason ?? error;
      throw this.failed(what, fetchFailure(error));
    }
    this.watch.moved();
    if (response.ok) return response;
    const text = await answerText(response, this.watch.moved).catch(() => '');
    throw this.failed(what, `${response.status} ${azureReason(text) || response.statusText}`.trim());
  }

  private failed(what: string, reason: string) {
    return new Error(`Azure ${what} ${this.blob.label} failed: ${reason}`);
  }
}

const hexBytes = (hex: string) =>
  Array.from({ length: hex.length / 2 }, (_, i) => Number.parseInt(hex.substr(i * 2, 2), 16));

/** An error document's Code and the first line of its Message (never the string to sign it echoes). */
function azureReason(xml: string): string {
  const code = /<Code>([^<]*)<\/Code>/.exec(xml)?.[1];
  const message = /<Message>([^<\n]*)/.exec(xml)?.[1];
  const reason = code === undefined && message === undefined ? xml : [code, message].filter(Boolean).join(' ');
  return reason.replace(/\s+/g, ' ').trim().slice(0, 200);
}
