/**
 * The rules of a destination's `wis2.topic`, checked where the topic is written and again at
 * publication: an MQTT topic a publisher may use and, under `origin/a/wis2/`, the WIS2 Topic
 * Hierarchy's fixed levels; and the rule of core data, whose links take no credentials.
 */

/** MQTT caps a topic at 65,535 bytes; a WIS2 topic is a few hundred at most. */
const MAX_TOPIC_BYTES = 1024;

/** A WIS2 centre id: lower-case letters, digits and hyphens (`{tld}-{centre}`), as a topic level carries it. */
export const CENTRE_ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/** The WTH's data policies and earth-system disciplines (wmo-im/wis2-topic-hierarchy, level 6 and 7). */
export const DATA_POLICIES = ['core', 'recommended'] as const;
export const DISCIPLINES = [
  'weather',
  'climate',
  'hydrology',
  'atmospheric-composition',
  'cryosphere',
  'ocean',
  'space-weather',
] as const;

export const TOPIC_EXPECTED =
  'an MQTT topic without wildcards or empty levels, e.g. origin/a/wis2/<centre-id>/data/core/weather';
export const WTH_EXPECTED =
  `a WIS2 topic origin/a/wis2/<centre-id>/data/<${DATA_POLICIES.join('|')}>/<discipline>[/...], ` +
  `the discipline one of ${DISCIPLINES.join(', ')}`;

/**
 * What a publisher's topic must be, or null when `topic` is one: no `+` or `#` (they are for subscribing),
 * no empty level, no control character.
 */
export function topicProblem(topic: string): string | null {
  const levels = topic.split('/');
  const mqtt =
    topic !== '' &&
    new TextEncoder().encode(topic).length <= MAX_TOPIC_BYTES &&
    !/[+#\p{Cc}]/u.test(topic) &&
    levels.every((level) => level.trim() !== '' && level === level.trim());
  if (!mqtt) return TOPIC_EXPECTED;
  // Other forms stay open (a test broker may use its own); the WIS2 form is held to its hierarchy, and a
  // destination announces its own data on `origin` (a Global Cache republishes under `cache` by itself).
  const [channel, version, system, centre, type, policy, discipline] = levels;
  if (version !== 'a' || system !== 'wis2' || (channel !== 'origin' && channel !== 'cache')) return null;
  const wth =
    channel === 'origin' &&
    CENTRE_ID.test(centre ?? '') &&
    type === 'data' &&
    (DATA_POLICIES as readonly string[]).includes(policy ?? '') &&
    (DISCIPLINES as readonly string[]).includes(discipline ?? '');
  return wth ? null : WTH_EXPECTED;
}

/**
 * Whether a topic announces core data (a `data` level followed by `core`, as in
 * `origin/a/wis2/<centre-id>/data/core/…`):
 * the WNM requires that its link downloads the data with no further action, so no credentials.
 */
export function isCoreTopic(topic: string): boolean {
  const levels = topic.split('/');
  return levels.some((level, i) => level === 'data' && levels[i + 1] === 'core');
}

/**
 * Why a destination can't take `topic` when it has no open-access way (an active open-access incoming user
 * associated with it, whose tree is public under /portal/home/<user>/), or null when it can.
 */
export function coreTopicRefusal(
  destination: string,
  topic: string,
  openAccessUsers: readonly string[],
): string | null {
  if (!isCoreTopic(topic) || openAccessUsers.length > 0) return null;
  return (
    `wis2.topic '${topic}' announces core data, whose links must download without credentials, and ` +
    `destination ${destination} has no active open-access incoming user (associate one first, or use a ` +
    'data/recommended topic)'
  );
}
