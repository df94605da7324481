import { invalid } from '../common/errors.ts';
import { readOptions } from '../hosts/options.ts';
import { parseTimeRanges, TIME_RANGE_EXPECTED } from './active-time-range.ts';
import { chooseLine, ruleBoolean, ruleParameters, ruleSelects } from './rule-lines.ts';
import { DURATION_EXPECTED, parseDuration } from './schedule.ts';

/** A destination's `scheduler.*` options that act on a put (reference appendix §1.5, §6.3). */
export interface SchedulerOptions {
  /** `yes` holds every new transfer, `never` queues even a put's standby, `no` leaves the put's choice. */
  standby: 'yes' | 'no' | 'never' | null;
  lifetimeMs: number | null;
  delayMs: number | null;
  asap: boolean | null;
  /** The `scheduler.force` rule set: per target, lifetime, delay, asap and standby overrides. */
  force: string | null;
  activeTimeRange: string | null;
}

export function schedulerOptions(data: string): SchedulerOptions {
  const o = readOptions(data);
  const standby = o.get('scheduler.standby')?.trim().toLowerCase();
  const duration = (name: string) => {
    const text = o.get(name);
    const ms = text === undefined || text.trim() === '' ? null : parseDuration(text.trim());
    return ms !== null && ms > 0 ? ms : null;
  };
  return {
    standby:
      standby === 'never'
        ? 'never'
        : ruleBoolean(standby) === true
          ? 'yes'
          : ruleBoolean(standby) === false
            ? 'no'
            : null,
    lifetimeMs: duration('scheduler.lifetime'),
    delayMs: duration('scheduler.delay'),
    asap: ruleBoolean(o.get('scheduler.asap')),
    force: o.get('scheduler.force')?.trim() || null,
    activeTimeRange: o.get('scheduler.activeTimeRange')?.trim() || null,
  };
}

/**
 * `scheduler.force` given as a plain yes or true (no rule): a duplicate put is taken as a forced
 * one. The reference reads the option only as rules, where such a value changes nothing.
 */
export function forcesDuplicates(data: string): boolean {
  return ruleBoolean(readOptions(data).get('scheduler.force')) === true;
}

export interface PutSchedule {
  standby: boolean;
  scheduledAt: Date;
  lifetimeMs: number;
}

export interface AppliedSchedule {
  status: 'WAIT' | 'HOLD';
  scheduledAt: Date;
  queueAt: Date;
  expiresAt: Date;
}

/**
 * What a destination's options make of a put, as the reference's ECpdsPlugin does: the
 * destination's lifetime replaces the put's (unless it would already have expired); its delay
 * moves the schedule and the expiry; asap queues at once whatever the schedule; standby `yes`
 * holds and `never` queues. `scheduler.force` lines that select the target override each.
 */
export function applySchedulerOptions(
  options: SchedulerOptions,
  target: string,
  put: PutSchedule,
  now: Date,
): AppliedSchedule {
  const forced = forcedParameters(options.force, target);
  const duration = (key: string, fallback: number | null) => {
    const text = forced.get(key);
    const ms = text === undefined ? null : parseDuration(text);
    return ms !== null && ms > 0 ? ms : fallback;
  };
  let expiry = put.scheduledAt.getTime() + put.lifetimeMs;
  const lifetime = duration('lifetime', options.lifetimeMs);
  if (lifetime !== null && put.scheduledAt.getTime() + lifetime >= now.getTime())
    expiry = put.scheduledAt.getTime() + lifetime;
  const delay = duration('delay', options.delayMs) ?? 0;
  const scheduled = put.scheduledAt.getTime() + delay;
  const asap = ruleBoolean(forced.get('asap')) ?? options.asap ?? false;
  const forcedStandby = forced.get('standby')?.toLowerCase();
  let status: 'WAIT' | 'HOLD' = put.standby ? 'HOLD' : 'WAIT';
  if (status === 'WAIT' && (options.standby === 'yes' || holds(forcedStandby))) status = 'HOLD';
  else if (status === 'HOLD' && (options.standby === 'never' || forcedStandby === 'never')) status = 'WAIT';
  return {
    status,
    scheduledAt: new Date(scheduled),
    queueAt: asap ? now : new Date(scheduled),
    expiresAt: new Date(expiry + delay),
  };
}

const holds = (value: string | undefined) => value === 'always' || ruleBoolean(value) === true;

function forcedParameters(force: string | null, target: string): Map<string, string> {
  if (force === null) return new Map();
  const params = ruleParameters(chooseLine(target, force));
  return ruleSelects(params, target) ? params : new Map();
}

const bad = (name: string, value: string, expected: string) =>
  invalid(`Invalid value for option ${name}: '${value}' (${expected})`);
const BOOLEAN_EXPECTED = 'yes, no, true or false expected';

function checkDuration(name: string, value: string) {
  const ms = parseDuration(value.trim());
  if (ms === null || ms <= 0) throw bad(name, value, `a positive duration: ${DURATION_EXPECTED}`);
}

function checkRegex(name: string, value: string) {
  try {
    new RegExp(value, 'u');
  } catch {
    throw bad(name, value, 'a regular expression expected');
  }
}

/** The parameters of every line of a rule set (`scheduler.force`, `alias.*`). */
function checkRuleSet(name: string, text: string) {
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    const close = line.indexOf(')');
    const params = ruleParameters(line.startsWith('(') && close > 0 ? line.slice(close + 1) : line);
    for (const [key, value] of params) {
      if (key === 'lifetime' || key === 'delay') checkDuration(`${name} ${key}`, value);
      else if (key === 'asap' || key === 'event' || key === 'recursive') {
        if (ruleBoolean(value) === null) throw bad(`${name} ${key}`, value, BOOLEAN_EXPECTED);
      } else if (key === 'standby') {
        if (!holds(value.toLowerCase()) && value.toLowerCase() !== 'never' && ruleBoolean(value) === null)
          throw bad(`${name} ${key}`, value, 'yes, no, always or never expected');
      } else if (key === 'pattern' || key === 'ignore') checkRegex(`${name} ${key}`, value);
      else if (key === 'priority' && !/^\d{1,2}$/.test(value)) throw bad(`${name} ${key}`, value, '0 to 99 expected');
    }
  }
}

/**
 * Refuses a destination's options text whose scheduler or alias options the put and the scheduler
 * could not read, naming the option and what it takes.
 */
export function checkDestinationOptions(data: string, checkRequeueOn: (rule: string) => string | null): void {
  for (const [name, value] of readOptions(data)) {
    switch (name) {
      case 'scheduler.standby':
        if (value.trim().toLowerCase() !== 'never' && ruleBoolean(value) === null)
          throw bad(name, value, 'yes, no or never expected');
        break;
      case 'scheduler.asap':
        if (ruleBoolean(value) === null) throw bad(name, value, BOOLEAN_EXPECTED);
        break;
      case 'scheduler.lifetime':
      case 'scheduler.delay':
        checkDuration(name, value);
        break;
      case 'scheduler.activeTimeRange':
        if (parseTimeRanges(value) === null) throw bad(name, value, TIME_RANGE_EXPECTED);
        break;
      case 'scheduler.requeuepattern':
      case 'scheduler.requeueignore':
        checkRegex(name, value);
        break;
      case 'scheduler.requeueon': {
        const problem = checkRequeueOn(value);
        if (problem !== null) throw bad(name, value, problem);
        break;
      }
      case 'scheduler.force':
        checkRuleSet(name, value);
        break;
      default:
        if (name.startsWith('alias.')) checkRuleSet(name, value);
    }
  }
}
