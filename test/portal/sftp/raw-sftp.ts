import type { ClientChannel } from 'ssh2';
import { connect } from './support.ts';

/**
 * The SFTP protocol by hand over ssh2's client (a channel of the `sftp` subsystem), for the requests
 * ssh2's SFTP client has no call for: the check-file extensions. Each request waits for its answer.
 */
export async function rawSftp(port: number, login: { username: string; password: string }) {
  const { client, sftp } = await connect(port, login);
  sftp.end();
  const channel = await new Promise<ClientChannel>((resolve, reject) =>
    client.subsys('sftp', (error, stream) => (error ? reject(error) : resolve(stream))),
  );
  let received = Buffer.alloc(0);
  const waiting: Array<(packet: Packet) => void> = [];
  channel.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    while (received.length >= 4 && received.length >= 4 + received.readUInt32BE(0)) {
      const body = received.subarray(4, 4 + received.readUInt32BE(0));
      received = received.subarray(4 + body.length);
      waiting.shift()?.({ type: body[0]!, payload: body.subarray(body[0] === VERSION ? 1 : 5) });
    }
  });
  const exchange = (packet: Buffer) =>
    new Promise<Packet>((resolve) => {
      waiting.push(resolve);
      channel.write(Buffer.concat([uint32(packet.length), packet]));
    });
  const version = await exchange(Buffer.concat([Buffer.from([1]), uint32(3)]));
  if (version.type !== VERSION) throw new Error(`no VERSION but ${version.type}`);
  let id = 0;
  return {
    /** A request of a type, with its id first, then its fields. */
    request: (type: number, ...fields: Buffer[]) =>
      exchange(Buffer.concat([Buffer.from([type]), uint32(++id), ...fields])),
    close: () => client.end(),
  };
}

export interface Packet {
  type: number;
  /** What follows the type (and the request id, but in VERSION). */
  payload: Buffer;
}

const VERSION = 2;
export const OPEN = 3;
export const CLOSE = 4;
export const OPENDIR = 11;
export const EXTENDED = 200;
export const STATUS = 101;
export const HANDLE = 102;
export const EXTENDED_REPLY = 201;

export const uint32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
export const uint64 = (n: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(n);
  return b;
};
export const string = (value: string | Buffer) => {
  const bytes = typeof value === 'string' ? Buffer.from(value) : value;
  return Buffer.concat([uint32(bytes.length), bytes]);
};

/** The strings of a payload from its start, as many as asked. */
export function strings(payload: Buffer, count: number): { values: Buffer[]; rest: Buffer } {
  const values: Buffer[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    const length = payload.readUInt32BE(at);
    values.push(payload.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return { values, rest: payload.subarray(at) };
}

/** A STATUS answer's code and message. */
export const statusOf = (packet: Packet) => ({
  code: packet.payload.readUInt32BE(0),
  message: strings(packet.payload.subarray(4), 1).values[0]!.toString(),
});
