import { describe, expect, it } from 'vitest';
import { InvalidRequeueRule, parseRequeueRule, requeueRuleOf } from '../../core/acquisition/requeue-rule.ts';

/** When a file listed again is acquired again: the rules operators write, read without running code. */
const values = (over: Partial<Record<string, number | string>> = {}) => ({
  time1: 1000,
  size1: 10,
  time2: 2000,
  size2: 10,
  destination: 'ACQ',
  target: 'a.grib',
  original: '/in/a.grib',
  ...over,
});

describe('requeueon', () => {
  it.each([
    ['$time2 > $time1 && $size2 != $size1', {}, false],
    ['$time2 > $time1 && $size2 != $size1', { size2: 11 }, true],
    ['$time2 > $time1', {}, true],
    ['!($time2 <= $time1) || $size2 == 0', { time2: 500 }, false],
    ['$size2 >= $size1 * 2 - 1', { size2: 19 }, true],
    ['$destination == \'ACQ\' && $target != "b.grib"', {}, true],
    ['$time2 - $time1 > 60 * 1000', {}, false],
  ])('%s with %o gives %s', (rule, over, expected) => {
    expect(parseRequeueRule(rule)(values(over))).toBe(expected);
  });

  it.each([
    ['$time2 >', 'expected more'],
    ['$mtime > 0', 'unknown variable $mtime'],
    ['($time2 > $time1', 'expected )'],
    ['$time2 = $time1', 'cannot read'],
    ['require("fs")', 'cannot read'],
    ['  ', 'empty'],
  ])('refuses %s', (rule, message) => {
    expect(() => parseRequeueRule(rule)).toThrow(InvalidRequeueRule);
    expect(() => parseRequeueRule(rule)).toThrow(message);
  });

  it('from the options: requeueon, else the legacy flags, else never', () => {
    const options = (o: Record<string, string>) => (name: string) => o[name];
    expect(requeueRuleOf(options({}))).toBeNull();
    const update = requeueRuleOf(options({ requeueonupdate: 'yes' }))!;
    expect([update(values()), update(values({ size2: 11 }))]).toEqual([false, true]);
    const sameSize = requeueRuleOf(options({ requeueonupdate: 'yes', requeueonsamesize: 'yes' }))!;
    expect(sameSize(values())).toBe(true);
    const own = requeueRuleOf(options({ requeueon: '$size2 > $size1', requeueonupdate: 'yes' }))!;
    expect([own(values()), own(values({ size2: 11 }))]).toEqual([false, true]);
  });
});
