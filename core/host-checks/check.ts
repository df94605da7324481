import { messageOf } from '../common/errors.ts';
import type { MethodName } from '../dissemination/method-options.ts';
import type { CheckFile, HostConnection, TransferMethod, TransferMethods } from '../dissemination/methods.ts';
import { connectionTo, failureMessage } from '../dissemination/send.ts';
import type { Ports } from '../ports.ts';
import { CHECK_BYTES, type CheckResult, checkFileOf } from './policy.ts';
import type { CheckedHost } from './ports.ts';

/** The check's own deadline, in the words its result keeps. */
export class CheckTimedOut extends Error {}

/**
 * One check of a host with its transfer method, the movers' code: never throws, never takes longer than
 * `timeoutMs` (the method is aborted then, and not waited for). The result's message is scrubbed of the
 * host's secrets as a transfer's failure is.
 */
export async function runHostCheck(
  ports: Ports,
  methods: TransferMethods,
  host: CheckedHost,
  timeoutMs: number,
  outer?: AbortSignal,
): Promise<CheckResult> {
  const at = ports.clock();
  const started = performance.now();
  const controller = new AbortController();
  const cut = new CheckTimedOut(`Check timed out after ${timeoutMs} ms`);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort(cut);
      reject(cut);
    }, timeoutMs);
  });
  // It may fire before the race below is entered (while the credentials are unsealed): never unhandled.
  expired.catch(() => undefined);
  const forward = () => controller.abort(outer?.reason);
  outer?.addEventListener('abort', forward, { once: true });
  let secrets: string[] = [];
  let ok = false;
  let message: string;
  try {
    const protocol = (host.module ?? 'none') as MethodName;
    const method = methods[protocol];
    if (!method) throw new Error(`Transfer method ${host.module ?? '(none)'} not available here`);
    const reached = await connectionTo(ports, host, protocol);
    secrets = reached.secrets;
    const name = checkFileOf(host.checkFilename);
    const file = name === null ? null : { name, bytes: CHECK_BYTES };
    // A method that ignores its signal still ends the check at the timeout.
    message = await Promise.race([checkWith(method, protocol, reached.connection, file, controller.signal), expired]);
    ok = true;
  } catch (error) {
    message = controller.signal.aborted ? messageOf(controller.signal.reason) : messageOf(error);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', forward);
  }
  return {
    at,
    ok,
    durationMs: Math.round(performance.now() - started),
    message: failureMessage(ok ? message : `Host check failed: ${message}`, secrets),
  };
}

/**
 * The method's own check; else, for methods that cannot remove (S3, HTTP, Azure, WebDAV), the check file
 * sent as a transfer would be and left there, saying so, or without a check file a listing of the host's
 * directory, the one request such a method makes that writes nothing.
 */
async function checkWith(
  method: TransferMethod,
  protocol: string,
  host: HostConnection,
  file: CheckFile | null,
  signal: AbortSignal,
): Promise<string> {
  if (method.check) return method.check(host, file, signal);
  // Its users fetch from the portal: there is no remote host, and a send would only read the source.
  if (protocol === 'portal') return 'Nothing to check: the portal method delivers to no host';
  if (file !== null) {
    async function* bytes() {
      yield file!.bytes;
    }
    const sent = await method.send(host, { target: file.name, size: file.bytes.byteLength }, bytes(), signal);
    return `Wrote ${file.name} (${sent.sent} bytes); not removed: the ${protocol} method has no remove`;
  }
  if (method.list) {
    const entries = await method.list({ ...host, directory: '' }, host.directory, signal);
    return `Listed ${host.directory || 'the home directory'} (${entries.length} entries)`;
  }
  throw new Error(`The ${protocol} method cannot be checked without a checkFilename`);
}
