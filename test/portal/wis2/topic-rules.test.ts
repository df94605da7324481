import { describe, expect, it } from 'vitest';
import { checkWis2Option } from '../../../core/wis2/options.ts';
import { coreTopicRefusal, isCoreTopic, TOPIC_EXPECTED, topicProblem, WTH_EXPECTED } from '../../../core/wis2/topic.ts';

/** The rules of a destination's wis2.topic (core/wis2/topic.ts), as the writers and the publisher apply them. */

describe('a WIS2 topic', () => {
  it('is held to the WIS2 Topic Hierarchy under origin/a/wis2, other forms taken as they are', () => {
    for (const topic of [
      'origin/a/wis2/xx-ecpds/data/core/weather',
      'origin/a/wis2/xx-ecpds/data/recommended/atmospheric-composition/experimental/x',
      'origin/a/wis2/ca-eccc-msc/data/core/space-weather/a/b/c',
      'test/broker/own-topic',
      'origin/b/wis2/anything',
    ]) {
      expect(topicProblem(topic), topic).toBeNull();
    }
    for (const topic of [
      'origin/a/wis2/xx-ecpds',
      'origin/a/wis2/XX/data/core/weather',
      'origin/a/wis2/xx/metadata/core/weather',
      'origin/a/wis2/xx/data/public/weather',
      'origin/a/wis2/xx/data/core/weathr',
      'origin/a/wis2/xx/data/core',
      'cache/a/wis2/xx/data/core/weather',
    ]) {
      expect(topicProblem(topic), topic).toBe(WTH_EXPECTED);
    }
    for (const topic of ['', 'a/+/b', 'a/#', 'a//b', ' a', 'a/\u0001'])
      expect(topicProblem(topic)).toBe(TOPIC_EXPECTED);
    expect(checkWis2Option('wis2.topic', 'origin/a/wis2/xx/data/core/ocean')).toBeNull();
    expect(checkWis2Option('wis2.topic', 'origin/a/wis2/xx/data/core/sea')).toBe(
      `Invalid value for wis2.topic: 'origin/a/wis2/xx/data/core/sea' (${WTH_EXPECTED} expected)`,
    );
  });

  it('of core data needs an open-access user: a data level followed by core', () => {
    expect(isCoreTopic('origin/a/wis2/xx/data/core/weather')).toBe(true);
    expect(isCoreTopic('cache/a/wis2/xx/data/core/weather/x')).toBe(true);
    expect(isCoreTopic('test/data/core')).toBe(true);
    expect(isCoreTopic('origin/a/wis2/xx/data/recommended/weather/core')).toBe(false);
    expect(isCoreTopic('origin/a/wis2/core/data/recommended/weather')).toBe(false);
    expect(coreTopicRefusal('D', 'origin/a/wis2/xx/data/core/weather', ['public'])).toBeNull();
    expect(coreTopicRefusal('D', 'origin/a/wis2/xx/data/recommended/weather', [])).toBeNull();
    expect(coreTopicRefusal('D', 'origin/a/wis2/xx/data/core/weather', [])).toMatch(
      /^wis2.topic 'origin\/a\/wis2\/xx\/data\/core\/weather' announces core data, .* destination D has no active/,
    );
  });
});
