import { invalid } from '../common/errors.ts';
import { readOptions } from '../hosts/options.ts';
import type { NewTransfer } from './ports.ts';
import { chooseLine, ruleBoolean, ruleParameters, ruleSelects } from './rule-lines.ts';
import { parseDuration } from './schedule.ts';
import { applySchedulerOptions, schedulerOptions } from './scheduler-options.ts';

/** The reference's default of a destination's maxPending (DestinationActionForm). */
export const DEFAULT_MAX_PENDING = 8000;

/** A destination a put may reach: itself and, through its aliases, the alias closure. */
export interface PutDestination {
  name: string;
  data: string;
  maxPending: number | null;
  maxFileSize: number | null;
  /**
   * Its transfers waiting to be sent (WAIT, RETR, INTR), counted only up to one past its maxPending
   * (exact once past it; at most 1 when it has none): all the limit's check needs.
   */
  pending: number;
  /** The destinations it is aliased to, by name. */
  aliases: string[];
}

export interface PlannedTransfer extends NewTransfer {
  queueAt: Date;
  /** Appended to the put's history comment: who it was aliased from. */
  aliasedFrom: string | null;
}

interface Level {
  target: string;
  lifetimeMs: number | null;
  delayMs: number;
  priority: number;
  asap: boolean | null;
  via: string[];
}

function fill(text: string, target: string, destination: string, alias: string, now: Date): string {
  const slash = target.lastIndexOf('/');
  const values: Record<string, string> = {
    $target: target,
    $name: target.slice(slash + 1),
    $path: target,
    $parent: slash < 0 ? 'null' : target.slice(0, slash),
    $destination: destination,
    $alias: alias,
    $date: now.toISOString().slice(0, 10).replace(/-/g, ''),
  };
  return text.replace(/\$(target|name|path|parent|destination|alias|date)/g, (m) => values[m]!);
}

/**
 * The alias closure of a put, as the reference's AliasesParser walks it: each alias of a reached
 * destination whose rule (`alias.<alias>`, else `alias.pattern`, in the aliased-from destination's
 * options) selects the target gets a transfer, with the rule's target, lifetime, priority, asap and
 * delay (added to the levels above); with `recursive=yes` its own aliases are walked in turn. A
 * destination is reached once, so cycles end.
 */
export function aliasClosure(
  start: string,
  reach: Map<string, PutDestination>,
  first: Level,
  now: Date,
): Map<string, Level> {
  const levels = new Map<string, Level>();
  const walk = (name: string, level: Level) => {
    levels.set(name, level);
    const from = reach.get(name);
    if (!from) return;
    const options = readOptions(from.data);
    for (const alias of from.aliases) {
      if (levels.has(alias) || !reach.has(alias)) continue;
      const rules = options.get(`alias.${alias}`) ?? options.get('alias.pattern');
      const line = rules === undefined ? null : chooseLine(level.target, rules);
      const params = ruleParameters(line === null ? null : fill(line, level.target, name, alias, now));
      if (!ruleSelects(params, level.target)) continue;
      const lifetime = parseDuration(params.get('lifetime') ?? '');
      const delay = parseDuration(params.get('delay') ?? '');
      const priority = Number(params.get('priority'));
      const next: Level = {
        target: params.get('target') ?? level.target,
        lifetimeMs: lifetime !== null && lifetime > 0 ? lifetime : level.lifetimeMs,
        delayMs: level.delayMs + (delay ?? 0),
        priority: Number.isInteger(priority) && priority >= 0 && priority <= 99 ? priority : level.priority,
        asap: ruleBoolean(params.get('asap')) ?? level.asap,
        via: [...level.via, alias],
      };
      if (ruleBoolean(params.get('recursive')) === true) walk(alias, next);
      else levels.set(alias, next);
    }
  };
  walk(start, first);
  return levels;
}

/**
 * The transfers of one put: the destination's own, with its scheduler options, and one per
 * destination of the alias closure. Refused when a destination holds more waiting transfers than
 * its maxPending, or the file is larger than its maxFileSize (the reference's messages).
 */
export function planPut(
  put: NewTransfer,
  reach: Map<string, PutDestination>,
  size: number,
  now: Date,
): PlannedTransfer[] {
  const main = reach.get(put.destination)!;
  const lifetimeMs = put.expiresAt.getTime() - put.scheduledAt.getTime();
  const own = applySchedulerOptions(schedulerOptions(main.data), put.target, { ...put, lifetimeMs }, now);
  const first: Level = {
    target: put.target,
    lifetimeMs: null,
    delayMs: 0,
    priority: put.priority,
    asap: null,
    via: [],
  };
  const planned: PlannedTransfer[] = [];
  for (const [name, level] of aliasClosure(put.destination, reach, first, now)) {
    checkLimits(reach.get(name)!, size);
    if (name === put.destination) {
      planned.push({ ...put, ...own, aliasedFrom: null });
      continue;
    }
    const base = own.scheduledAt.getTime();
    const expires =
      level.lifetimeMs !== null && base + level.lifetimeMs >= now.getTime()
        ? base + level.lifetimeMs
        : own.expiresAt.getTime();
    const scheduledAt = new Date(base + level.delayMs);
    const options = schedulerOptions(reach.get(name)!.data);
    const status = applySchedulerOptions(options, level.target, { ...put, lifetimeMs }, now).status;
    const asap = level.asap ?? own.queueAt.getTime() !== own.scheduledAt.getTime();
    planned.push({
      ...put,
      destination: name,
      target: level.target,
      priority: level.priority,
      status,
      scheduledAt,
      queueAt: asap ? now : scheduledAt,
      expiresAt: new Date(expires + level.delayMs),
      aliasedFrom: aliasComment(put.destination, level.via),
    });
  }
  return planned;
}

function aliasComment(from: string, path: string[]) {
  const through = path.slice(0, -1);
  const via = through.length ? ` via Destination=${through.join(', Destination=')}` : '';
  return `aliased from Destination=${from}${via}`;
}

function checkLimits(d: PutDestination, size: number) {
  const maxPending = d.maxPending ?? DEFAULT_MAX_PENDING;
  if (maxPending > 0 && d.pending > maxPending)
    throw invalid(`Destination ${d.name} have ${d.pending} pending DataTransfer(s) (limit is ${maxPending})`);
  if (d.maxFileSize !== null && d.maxFileSize > 0 && size > d.maxFileSize)
    throw invalid(`File exceeds maximum allowed size: ${size} bytes (limit is ${d.maxFileSize} bytes)`);
}
