import { contentTypeOf } from '../portal/media-types.ts';
import { encodePath, encodeSegment, isSafeSegment } from '../portal/tree.ts';
import type { Wis2Geometry } from './options.ts';

/**
 * The WIS2 Notification Message (WMO-No. 1313, WNM 1.0) of a portal file: a GeoJSON Feature whose
 * one link downloads the file over the HTTPS portal with no further step.
 */

export const WNM_CONFORMANCE = 'http://wis.wmo.int/spec/wnm/1/conf/core';
/** A WNM carries at most this many bytes (its JSON, UTF-8). */
export const MAX_MESSAGE_BYTES = 8192;

export type NotificationKind = 'new' | 'update' | 'deletion';

/** The link relation of each kind, as WNM 1.0 names them (`canonical` is IANA's, the others WMO's). */
export const LINK_RELATIONS: Readonly<Record<NotificationKind, string>> = {
  new: 'canonical',
  update: 'http://def.wmo.int/def/rel/wnm/-/update',
  deletion: 'http://def.wmo.int/def/rel/wnm/-/deletion',
};

/** How the link's URL is reached: a password (the user's or a subscriber's) over HTTP Basic authentication. */
export const BASIC_SECURITY = {
  default: {
    type: 'http',
    scheme: 'basic',
    description:
      'The data portal login (user id and password, or a subscriber’s e-mail password) of a user ' +
      'associated with the destination, over HTTP Basic authentication.',
  },
} as const;

export interface WnmLink {
  href: string;
  rel: string;
  type: string;
  length: number;
  security?: typeof BASIC_SECURITY;
}

export interface Wnm {
  id: string;
  conformsTo: string[];
  type: 'Feature';
  geometry: Wis2Geometry | null;
  properties: {
    data_id: string;
    metadata_id?: string;
    pubtime: string;
    datetime: string;
    integrity?: { method: 'sha512'; value: string };
  };
  links: [WnmLink];
}

export interface NotifiedFile {
  destination: string;
  /** The transfer's target: the path below the destination's directory. */
  target: string;
  size: number;
  /** When the file was registered: the time the portal shows for it. */
  modifiedAt: Date;
  /** The time of its data, when its put's metadata gives one (see dataTimeOf): the message's `datetime`. */
  dataTime?: Date | null;
  /** Base64; null when it can't be known (a deleted file whose source is gone). */
  sha512: string | null;
}

/**
 * The portal URL of a file: an open-access user's public one when the destination has such a user
 * (anyone downloads it as it is), otherwise the authenticated one. `origin` is the portal's public
 * address (scheme, host and any path prefix, without the trailing '/'). Null when the target has a
 * segment the portal's tree can't show (empty, `.` or `..`, a control character).
 */
export function portalFileUrl(
  origin: string,
  file: Pick<NotifiedFile, 'destination' | 'target'>,
  openAccessUser: string | null,
): string | null {
  const segments = file.target.split('/');
  if (!segments.every(isSafeSegment) || !isSafeSegment(file.destination)) return null;
  const base =
    openAccessUser === null ? `${origin}/portal/data/` : `${origin}/portal/home/${encodeSegment(openAccessUser)}/`;
  return `${base}${encodeSegment(file.destination)}/${encodePath(segments)}`;
}

/**
 * The query parameter naming a version of a portal file: the key of its stored copy. The plain path
 * serves the newest version; a link with this parameter serves the bytes of that version only, for
 * as long as the store keeps it, so that a message's `integrity` and `length` stay true.
 */
export const VERSION_PARAMETER = 'v';

/** The portal URL of one stored version of a file (`portalFileUrl` plus the version's key). */
export const versionUrl = (href: string, objectKey: string) =>
  `${href}?${VERSION_PARAMETER}=${encodeURIComponent(objectKey)}`;

export interface MessageInput {
  id: string;
  kind: NotificationKind;
  file: NotifiedFile;
  href: string;
  /** Whether the href needs the portal's login (it is not an open-access user's). */
  authenticated: boolean;
  pubtime: Date;
  geometry: Wis2Geometry | null;
  metadataId: string | null;
}

/**
 * The message as published: its JSON, or why it can't be (over 8,192 bytes: a long path counts
 * twice, in data_id and in the href). It is refused rather than trimmed: a trimmed href or data_id
 * would name another file.
 */
export function buildMessage(input: MessageInput): { json: string } | { refused: string } {
  const { file } = input;
  const link: WnmLink = {
    href: input.href,
    rel: LINK_RELATIONS[input.kind],
    type: contentTypeOf(file.target),
    length: file.size,
    ...(input.authenticated && { security: BASIC_SECURITY }),
  };
  const message: Wnm = {
    id: input.id,
    conformsTo: [WNM_CONFORMANCE],
    type: 'Feature',
    geometry: input.geometry,
    properties: {
      data_id: `${file.destination}/${file.target}`,
      ...(input.metadataId !== null && { metadata_id: input.metadataId }),
      pubtime: input.pubtime.toISOString(),
      datetime: (file.dataTime ?? file.modifiedAt).toISOString(),
      ...(file.sha512 !== null && { integrity: { method: 'sha512' as const, value: file.sha512 } }),
    },
    links: [link],
  };
  const json = JSON.stringify(message);
  const bytes = new TextEncoder().encode(json).length;
  if (bytes > MAX_MESSAGE_BYTES) {
    return { refused: `the message would take ${bytes} bytes (at most ${MAX_MESSAGE_BYTES}): the path is too long` };
  }
  return { json };
}
