import { readOptions } from '../hosts/options.ts';
import { CENTRE_ID, TOPIC_EXPECTED, topicProblem } from './topic.ts';

/**
 * A destination's WIS2 options, in its `data` as its other options (`incoming.*`): `wis2.topic`
 * (where its notifications go; none: it publishes nothing), `wis2.geometry` (a GeoJSON Point or
 * Polygon for every message; none: null) and `wis2.metadataId` (the WCMP2 record of its data).
 */
export const WIS2_OPTIONS: Readonly<Record<string, string>> = {
  'wis2.topic': TOPIC_EXPECTED,
  'wis2.geometry': 'a GeoJSON Point or Polygon, as JSON',
  'wis2.metadataId': 'the identifier of the dataset’s WCMP2 record, e.g. urn:wmo:md:<centre-id>:<local-id>',
  'wis2.globalCache': 'the centre id of the Global Cache the destination is, e.g. xx-ecpds-global-cache',
};

/** A GeoJSON geometry of a WIS2 message: a point or a polygon. */
export type Wis2Geometry = { type: 'Point'; coordinates: number[] } | { type: 'Polygon'; coordinates: number[][][] };

export interface Wis2Settings {
  topic: string;
  geometry: Wis2Geometry | null;
  metadataId: string | null;
}

/** Why `value` can't be a destination's option `name`, or null when it can. */
export function checkWis2Option(name: string, value: string): string | null {
  const expected = name === 'wis2.topic' ? topicProblem(value) : WIS2_OPTIONS[name];
  if (expected === undefined) return `Unknown WIS2 option ${name}; known: ${Object.keys(WIS2_OPTIONS).join(', ')}`;
  const ok =
    name === 'wis2.topic'
      ? expected === null
      : name === 'wis2.geometry'
        ? readGeometry(value) !== null
        : name === 'wis2.globalCache'
          ? CENTRE_ID.test(value.trim())
          : value.trim() !== '' && !/\p{Cc}/u.test(value);
  return ok ? null : `Invalid value for ${name}: '${value.slice(0, 200)}' (${expected} expected)`;
}

function readGeometry(text: string): Wis2Geometry | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { type, coordinates } = value as { type?: unknown; coordinates?: unknown };
  const position = (p: unknown) =>
    Array.isArray(p) && p.length >= 2 && p.length <= 3 && p.every((n) => typeof n === 'number' && Number.isFinite(n));
  if (type === 'Point' && position(coordinates)) return { type, coordinates: coordinates as number[] };
  const ring = (r: unknown) => Array.isArray(r) && r.length >= 4 && r.every(position);
  if (type === 'Polygon' && Array.isArray(coordinates) && coordinates.length >= 1 && coordinates.every(ring)) {
    return { type, coordinates: coordinates as number[][][] };
  }
  return null;
}

/**
 * Why a destination's options text can't be stored, for its `wis2.*` options, or null when it can:
 * the rule every write of a destination's options applies (the publisher applies it again to
 * options written otherwise). An empty `wis2.topic` is no topic: the destination publishes nothing.
 */
export function checkWis2Options(data: string): string | null {
  for (const [name, value] of readOptions(data)) {
    if (!name.startsWith('wis2.')) continue;
    const given = name === 'wis2.topic' ? value.trim() : value;
    if (name === 'wis2.topic' && given === '') continue;
    const reason = checkWis2Option(name, given);
    if (reason !== null) return reason;
  }
  return null;
}

/**
 * What a destination's options say of its notifications: null when it has no `wis2.topic`, a
 * message when an option can't be used (its files are then not notified, and the reason logged).
 */
export function wis2Settings(data: string): Wis2Settings | null | { invalid: string } {
  const options = readOptions(data);
  const topic = options.get('wis2.topic')?.trim();
  if (topic === undefined || topic === '') return null;
  for (const name of ['wis2.topic', 'wis2.geometry', 'wis2.metadataId']) {
    const value = options.get(name);
    if (value === undefined) continue;
    const reason = checkWis2Option(name, name === 'wis2.topic' ? value.trim() : value);
    if (reason !== null) return { invalid: reason };
  }
  const geometry = options.get('wis2.geometry');
  return {
    topic,
    geometry: geometry === undefined ? null : readGeometry(geometry),
    metadataId: options.get('wis2.metadataId')?.trim() ?? null,
  };
}

/**
 * The centre id of the Global Cache a destination is (`wis2.globalCache`), or null when it is none: the WIS2
 * messages its subscriptions receive are republished under `cache/a/wis2/…`, their data served from its copy.
 */
export function globalCacheOf(data: string): string | null {
  const value = readOptions(data).get('wis2.globalCache')?.trim();
  return value !== undefined && CENTRE_ID.test(value) ? value : null;
}
