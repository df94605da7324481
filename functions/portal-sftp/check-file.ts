import type { SFTPWrapper } from 'ssh2';
import ssh2 from 'ssh2';
import type { PortalIdentity } from '../../core/portal/access.ts';
import { answerCheckFile, type CheckFileRequest, knownSums } from '../../core/portal/file-sums.ts';
import type { PortalFile } from '../../core/portal/ports.ts';
import type { Ports } from '../../core/ports.ts';
import { sumsAt } from './sums-at.ts';

const { STATUS_CODE } = ssh2.utils.sftp;

/**
 * The `check-file-name` and `check-file-handle` extensions of SFTP (draft-ietf-secsh-filexfer-
 * extensions-00, section 3), and `check-file`, the handle form's older name that paramiko's
 * `SFTPFile.check` sends: a file's known sums (core/portal/file-sums.ts), under the rules of reading
 * it, in the first of the client's algorithms the file has a sum of. They are not named in the
 * server's VERSION (ssh2 sends it bare), so only a client that asks without looking gets them. lftp
 * uses neither these nor commands: it compares sizes and times.
 */

export interface CheckFileDeps {
  ports: Ports;
  identity(): Promise<PortalIdentity>;
  /** The file a handle was opened to read, once the user may still read it (throws its refusal otherwise). */
  readHandle(handle: Buffer): Promise<PortalFile>;
}

/** An SFTP status to answer with instead of a reply. */
export interface Status {
  code: number;
  message: string;
}

/**
 * Answers an EXTENDED request: sends the check-file reply, or answers the status to send (an
 * extension other than these is not supported).
 */
export async function checkFile(
  sftp: SFTPWrapper,
  id: number,
  name: string,
  data: Buffer | undefined,
  deps: CheckFileDeps,
): Promise<Status | null> {
  if (name !== 'check-file-name' && name !== 'check-file-handle' && name !== 'check-file') {
    return { code: STATUS_CODE.OP_UNSUPPORTED, message: `${name} is not supported here` };
  }
  const parsed = parseRequest(data);
  if (parsed === null) return { code: STATUS_CODE.BAD_MESSAGE, message: `Malformed ${name} request` };
  if (name === 'check-file-name') {
    const at = await sumsAt(deps.ports, await deps.identity(), parsed.target.toString('utf8'));
    if (at.kind === 'missing') return { code: STATUS_CODE.NO_SUCH_FILE, message: 'No such file' };
    if (at.kind === 'denied') return { code: STATUS_CODE.PERMISSION_DENIED, message: 'Permission denied' };
    if (at.kind === 'directory') return { code: STATUS_CODE.FAILURE, message: 'Is a directory' };
    return reply(sftp, id, answerCheckFile(parsed.request, at.size, at.sums));
  }
  const file = await deps.readHandle(parsed.target);
  return reply(sftp, id, answerCheckFile(parsed.request, file.size, knownSums(file)));
}

function reply(sftp: SFTPWrapper, id: number, answer: ReturnType<typeof answerCheckFile>): Status | null {
  if (answer.kind === 'invalid') return { code: STATUS_CODE.BAD_MESSAGE, message: answer.message };
  // What a client that can't have the hash is told, so that it reads the bytes instead.
  if (answer.kind === 'unsupported') return { code: STATUS_CODE.OP_UNSUPPORTED, message: answer.message };
  const body = Buffer.concat([
    Buffer.from([EXTENDED_REPLY]),
    uint32(id),
    string(Buffer.from('check-file')),
    string(Buffer.from(answer.algorithm)),
    Buffer.from(answer.hex, 'hex'),
  ]);
  sendPacket(sftp, Buffer.concat([uint32(body.length), body]));
  return null;
}

const EXTENDED_REPLY = 201;
const uint32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const string = (bytes: Buffer) => Buffer.concat([uint32(bytes.length), bytes]);

/** The request after its name: a path or handle, the algorithms, start-offset, length and block-size. */
function parseRequest(data: Buffer | undefined): { target: Buffer; request: CheckFileRequest } | null {
  if (data === undefined) return null;
  let at = 0;
  const next = () => {
    if (at + 4 > data.length) return null;
    const end = at + 4 + data.readUInt32BE(at);
    if (end > data.length) return null;
    const bytes = data.subarray(at + 4, end);
    at = end;
    return bytes;
  };
  const target = next();
  const algorithms = next();
  if (target === null || algorithms === null || at + 20 > data.length) return null;
  return {
    target,
    request: {
      algorithms: algorithms.toString('utf8'),
      start: data.readBigUInt64BE(at),
      length: data.readBigUInt64BE(at + 8),
      blockSize: data.readUInt32BE(at + 16),
    },
  };
}

/** What ssh2's server-side SFTP channel keeps of its outgoing side (lib/protocol/SFTP.js). */
interface Outgoing {
  outgoing: { id: number; state: string; window: number; packetSize: number };
  _protocol: { channelData(channel: number, data: Buffer): void };
  _buffer: Buffer[];
  _waitWindow: boolean;
  _chunkcb: (() => void) | undefined;
}

/**
 * Sends a packet ssh2 has no call for (an EXTENDED_REPLY), as ssh2 sends its own answers: queued
 * behind those waiting for the client's window, else written as far as the window lets it, the
 * rest queued until the client opens it (ssh2 drains the same queue).
 */
function sendPacket(sftp: SFTPWrapper, packet: Buffer) {
  const channel = sftp as unknown as Outgoing;
  if (channel.outgoing.state !== 'open') return;
  channel._buffer.push(packet);
  if (!channel._waitWindow) drain.call(channel);
}

function drain(this: Outgoing) {
  this._chunkcb = undefined;
  while (this._buffer.length > 0) {
    const packet = this._buffer[0]!;
    const length = Math.min(packet.length, this.outgoing.window, this.outgoing.packetSize);
    if (length === 0) {
      this._waitWindow = true;
      this._chunkcb = drain;
      return;
    }
    this.outgoing.window -= length;
    this._protocol.channelData(this.outgoing.id, packet.subarray(0, length));
    if (length === packet.length) this._buffer.shift();
    else this._buffer[0] = packet.subarray(length);
  }
}
