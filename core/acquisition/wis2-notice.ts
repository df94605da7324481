import { LINK_RELATIONS, type NotificationKind } from '../wis2/message.ts';

/** What a subscription takes from a WIS2 Notification Message that passed the schema's checks. */
export interface ReceivedNotice {
  id: string;
  dataId: string;
  pubtime: Date;
  kind: NotificationKind;
  /** The link's URL: where the data is, or was (a deletion). */
  href: string;
  /** The bytes the link announces (`length`), when it says. */
  length: number | null;
  /** `integrity`: the digest's method as Node names it (`sha512`, `sha3-256`) and its base64 value. */
  integrity: { method: string; value: string } | null;
  /** `properties.content`, decoded: the data itself, sent with the message. */
  content: Uint8Array | null;
  /** `properties.cache`: false when a Global Cache must not keep the data. */
  cache: boolean;
}

export class UnusableNotice extends Error {}

/** The integrity methods of WNM 1.0 (its schema's enum), with Node's names for them. */
const DIGESTS: Record<string, string> = {
  sha256: 'sha256',
  sha384: 'sha384',
  sha512: 'sha512',
  'sha3-256': 'sha3-256',
  'sha3-384': 'sha3-384',
  'sha3-512': 'sha3-512',
};

const KIND_OF_RELATION = new Map(Object.entries(LINK_RELATIONS).map(([kind, rel]) => [rel, kind as NotificationKind]));

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Reads a message the WNM schema accepted: its one link that says what happened (canonical for new data,
 * update, deletion; the first of them), and what the data must match. A message without such a link, or
 * whose content cannot be decoded, is refused with the reason.
 */
export function readNotice(message: Json, decode: ContentDecoder): ReceivedNotice {
  const properties = message.properties as Json;
  const links = (message.links as Json[]).filter((l) => KIND_OF_RELATION.has(String(l.rel)));
  const link = links[0];
  if (!link) throw new UnusableNotice('no canonical, update or deletion link');
  const integrity = isObject(properties.integrity) ? properties.integrity : null;
  const method = integrity ? DIGESTS[String(integrity.method)] : undefined;
  if (integrity && !method) throw new UnusableNotice(`integrity method ${String(integrity.method)} not supported`);
  const content = isObject(properties.content) ? properties.content : null;
  return {
    id: String(message.id),
    dataId: String(properties.data_id),
    pubtime: new Date(String(properties.pubtime)),
    kind: KIND_OF_RELATION.get(String(link.rel))!,
    href: String(link.href),
    length: typeof link.length === 'number' ? link.length : null,
    integrity: integrity && method ? { method, value: String(integrity.value) } : null,
    content: content ? decodeContent(content, decode) : null,
    cache: properties.cache !== false,
  };
}

/** Decodes `properties.content` (`utf-8`, `base64`, `gzip` of base64); the runtime gives gunzip. */
export type ContentDecoder = { base64: (text: string) => Uint8Array; gunzip: (bytes: Uint8Array) => Uint8Array };

function decodeContent(content: Json, decode: ContentDecoder) {
  const value = String(content.value);
  let bytes: Uint8Array;
  try {
    if (content.encoding === 'utf-8') bytes = new TextEncoder().encode(value);
    else if (content.encoding === 'base64') bytes = decode.base64(value);
    else if (content.encoding === 'gzip') bytes = decode.gunzip(decode.base64(value));
    else throw new Error(`encoding ${String(content.encoding)} unknown`);
  } catch (error) {
    throw new UnusableNotice(`content not decoded: ${(error as Error).message}`);
  }
  if (typeof content.size === 'number' && content.size !== bytes.length) {
    throw new UnusableNotice(`content of ${bytes.length} bytes, its size says ${content.size}`);
  }
  return bytes;
}

/** The file's name: the link's last path segment, else the data id's. */
export function noticeName(notice: Pick<ReceivedNotice, 'href' | 'dataId'>) {
  let path = notice.dataId;
  try {
    path = new URL(notice.href).pathname;
  } catch {}
  const segments = path.split('/').filter((s) => s !== '');
  const last = segments.at(-1) ?? notice.dataId;
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

/** Recommended data is for the Global Services to leave alone (WIS2 Guide): a subscription drops it. */
export const isRecommended = (topic: string) => /(^|\/)data\/recommended(\/|$)/.test(topic);
