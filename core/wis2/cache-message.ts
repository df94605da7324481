import { BASIC_SECURITY, LINK_RELATIONS, MAX_MESSAGE_BYTES } from './message.ts';

/**
 * A Global Cache's republication of a WIS2 message (WIS2 Guide, Global Cache): the message as it came, with a
 * new id; when the cache keeps the data, its `global-cache` property set and its link pointing at the cache's
 * copy. `pubtime`, `data_id` and every other field stay as they were.
 */

/** The topic a message is republished on: the one it came on, under `cache`; null outside `+/a/wis2/…`. */
export function cacheTopic(topic: string): string | null {
  const [root, a, wis2, centre, ...rest] = topic.split('/');
  if ((root !== 'origin' && root !== 'cache') || a !== 'a' || wis2 !== 'wis2' || !centre || rest.length === 0) {
    return null;
  }
  return ['cache', a, wis2, centre, ...rest].join('/');
}

/** The centre whose data a topic carries (its fourth level), as the WMO's Global Cache metrics label it. */
export const centreOf = (topic: string) => topic.split('/')[3] ?? '';

/** The cache's copy of the data, which the republished message's link gives. */
export interface CachedCopy {
  /** The centre id of the cache (`wis2.globalCache`). */
  cache: string;
  href: string;
  /** Whether the href needs the portal's login (the destination has no open-access user). */
  authenticated: boolean;
  /** The stored copy's size and SHA-512 (base64); null for a deletion, whose copy is gone. */
  copy: { size: number; sha512: string } | null;
}

const KINDS = new Set(Object.values(LINK_RELATIONS));

/**
 * The message as republished, or why it can't be (over 8,192 bytes once its link is the cache's). `copy` null:
 * the data is not kept (`cache: false`), the message goes on with a new id only.
 */
export function cacheMessage(
  origin: Record<string, unknown>,
  id: string,
  cached: CachedCopy | null,
): { json: string } | { refused: string } {
  const message = structuredClone(origin) as Record<string, unknown> & {
    properties: Record<string, unknown>;
    links: Array<Record<string, unknown>>;
  };
  message.id = id;
  if (cached !== null) {
    message.properties['global-cache'] = cached.cache;
    const link = message.links.find((l) => KINDS.has(String(l.rel)));
    if (link) {
      link.href = cached.href;
      if (cached.copy) link.length = cached.copy.size;
      if (cached.authenticated) link.security = BASIC_SECURITY;
      else delete link.security;
    }
    // A message without a digest gets the copy's (WIS2 Guide: a Global Cache may add one).
    if (cached.copy && message.properties.integrity === undefined) {
      message.properties.integrity = { method: 'sha512', value: cached.copy.sha512 };
    }
  }
  const json = JSON.stringify(message);
  const bytes = new TextEncoder().encode(json).length;
  if (bytes > MAX_MESSAGE_BYTES) {
    return { refused: `the message would take ${bytes} bytes (at most ${MAX_MESSAGE_BYTES}) with the cache's link` };
  }
  return { json };
}
