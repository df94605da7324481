import { describe, expect, it } from 'vitest';
import { insideActiveTimeRange, parseTimeRanges } from '../../core/data-files/active-time-range.ts';
import { requeueOnProblem, requeueWinner } from '../../core/data-files/requeue-on.ts';
import { chooseLine, ruleParameters, ruleSelects } from '../../core/data-files/rule-lines.ts';

/** The reference's option syntaxes read by the put rules: rule lines, time ranges, requeueon expressions. */
describe('rule lines (alias.*, scheduler.force)', () => {
  const rules = '(== {.*\\.dat}) priority=80\n(.= M) target=/m/$name\n(=. .tmp) ignore=.*';
  it('the first conditional line that holds gives the parameters', () => {
    expect(chooseLine('a.dat', rules)).toBe('priority=80');
    expect(chooseLine('Mfile', rules)).toBe('target=/m/$name');
    expect(chooseLine('other', rules)).toBeNull();
    expect(chooseLine('x', 'pattern=.*\\.grib,priority=1')).toBe('pattern=.*\\.grib,priority=1');
  });
  it('pattern selects and ignore rejects, on the whole target', () => {
    const p = ruleParameters('pattern=.*\\.grib;ignore=tmp.*');
    expect(ruleSelects(p, 'a.grib')).toBe(true);
    expect(ruleSelects(p, 'a.grib2')).toBe(false);
    expect(ruleSelects(p, 'tmp.grib')).toBe(false);
    expect(ruleSelects(new Map(), 'anything')).toBe(true);
  });
});

describe('scheduler.activeTimeRange', () => {
  it('reads HH:mm and HH:mm:ss ranges and refuses anything else', () => {
    expect(parseTimeRanges('06:00-18:00, 20:00:30-22:00')).toHaveLength(2);
    for (const bad of ['6-18', '06:00', '24:00-25:00', '06:00-18:00-19:00', '06:60-07:00']) {
      expect(parseTimeRanges(bad)).toBeNull();
    }
  });
  it('is open strictly inside a range, in UTC; no range never closes', () => {
    const at = (t: string) => new Date(`2030-05-05T${t}Z`);
    expect(insideActiveTimeRange('06:00-18:00', at('06:00:00.000'))).toBe(false);
    expect(insideActiveTimeRange('06:00-18:00', at('06:00:00.001'))).toBe(true);
    expect(insideActiveTimeRange('06:00-18:00', at('18:00:00.000'))).toBe(false);
    expect(insideActiveTimeRange('22:00-02:00', at('23:00:00.000'))).toBe(false);
    expect(insideActiveTimeRange(undefined, at('23:00:00.000'))).toBe(true);
  });
});

describe('scheduler.requeueon', () => {
  const file = (transferId: number, size: number, time: number, status = 'WAIT') => ({
    transferId,
    status,
    size,
    time,
    scheduledAt: new Date(0),
  });
  it('reads its grammar and refuses what it cannot read', () => {
    expect(requeueOnProblem('$size2 > $size1 && ($time2 - $time1) >= 0 || !false')).toBeNull();
    expect(requeueOnProblem('$size2 >')).not.toBeNull();
    expect(requeueOnProblem('process.exit()')).not.toBeNull();
  });
  it('the preferred file wins; even files go to one already being sent, else the highest id', () => {
    expect(requeueWinner('$size2 > $size1', file(1, 10, 0), [file(2, 20, 0)])?.transferId).toBe(2);
    expect(requeueWinner('$size2 > $size1', file(2, 20, 0), [file(1, 10, 0)])).toBeNull();
    expect(requeueWinner('$time2 > $time1', file(1, 5, 100), [file(2, 5, 100)])?.transferId).toBe(2);
    expect(requeueWinner('$time2 > $time1', file(2, 5, 100), [file(1, 5, 100, 'DONE')])?.transferId).toBe(1);
  });
});
