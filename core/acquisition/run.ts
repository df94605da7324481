import { isServiceError, messageOf } from '../common/errors.ts';
import { registerDataFile } from '../data-files/handlers.ts';
import { parseDuration } from '../data-files/schedule.ts';
import type { MethodName } from '../dissemination/method-options.ts';
import type { HostConnection, TransferMethods } from '../dissemination/methods.ts';
import { connectionTo, failureMessage } from '../dissemination/send.ts';
import { readOptions } from '../hosts/options.ts';
import type { Ctx } from '../ports.ts';
import {
  type HostTokens,
  type ListingLine,
  lineOption,
  priorityOf,
  readListingLines,
  replaceTokens,
  yes,
} from './listing-lines.ts';
import { nameOf } from './naming.ts';
import { type AcquiredBefore, type AcquisitionClaim, keyOf, type RunRecord } from './ports.ts';
import { requeueRuleOf } from './requeue-rule.ts';
import { RunOutput } from './run-output.ts';
import { judge, type ListedEntry, rulesOf } from './selection.ts';
import type { Wis2Intake } from './wis2-intake.ts';
import { isSubscription, subscriptionRun, type Wis2Subscriber } from './wis2-run.ts';

export interface RunDeps {
  ctx: Ctx;
  methods: TransferMethods;
  /** What WIS2 subscriptions need; where none is given, a subscribing host's runs fail saying so. */
  wis2?: { intake: Wis2Intake; subscriber: Wis2Subscriber };
}

const NOT_SELECTED = 'not_selected';

/** What a run cannot go past: `acquisition.maximumDuration`, else the reference's 10 minutes. */
export const DEFAULT_MAXIMUM_DURATION_MS = 10 * 60_000;

/** The longest a run may take, from the host's options. */
export function maximumDurationOf(data: string) {
  const text = readOptions(data).get('acquisition.maximumDuration');
  const ms = text === undefined ? null : parseDuration(text);
  return ms !== null && ms > 0 ? ms : DEFAULT_MAXIMUM_DURATION_MS;
}

/**
 * One run of an Acquisition host: each of its listing lines is listed, each entry judged, and each
 * entry selected registered for every destination the run is for, unless already acquired there
 * (requeueon decides then). Never throws: a host that cannot be listed fails the run, with what was
 * done before in its output; `signal` (maximumDuration, a stop) cuts it.
 */
export async function runAcquisition(deps: RunDeps, claim: AcquisitionClaim, signal: AbortSignal): Promise<RunRecord> {
  const output = new RunOutput(deps.ctx.ports.clock);
  try {
    await listAndRegister(deps, claim, output, signal);
    return { outcome: 'done', output: output.text(), counts: output.counts, cache: output.cacheTotals() };
  } catch (error) {
    const cut = signal.aborted;
    output.line(cut ? `Run cut: ${messageOf(signal.reason)}` : `Run failed: ${messageOf(error)}`);
    return {
      outcome: cut ? 'cut' : 'failed',
      output: output.text(),
      counts: output.counts,
      cache: output.cacheTotals(),
    };
  }
}

async function listAndRegister(deps: RunDeps, claim: AcquisitionClaim, output: RunOutput, signal: AbortSignal) {
  const { ctx, methods } = deps;
  const { host } = claim;
  const options = readOptions(host.data);
  const tokens = tokensOf(claim);
  const now = ctx.ports.clock();
  if (isSubscription(options)) {
    if (!deps.wis2) throw new Error('WIS2 subscriptions are not available on this runtime');
    const password = host.passwdSealed === null ? null : await ctx.ports.secrets.decrypt(host.passwdSealed);
    const wis2 = { ctx, ...deps.wis2 };
    try {
      return await subscriptionRun(wis2, claim, options, { password }, output, signal);
    } catch (error) {
      throw new Error(password === null ? messageOf(error) : messageOf(error).replaceAll(password, '***'));
    }
  }
  const lines = readListingLines(host.dir, options, tokens, now);
  if (lines.length === 0) throw new Error('The host has no listing line (its directory field is empty)');
  const protocol = (host.module ?? 'none') as MethodName;
  const method = methods[protocol];
  if (!method?.list) throw new Error(`Transfer method ${protocol} cannot list`);
  const { connection, secrets } = await connectionTo(ctx.ports, host, protocol);
  const listing: HostConnection = { ...connection, directory: '' };
  for (const line of lines) {
    signal.throwIfAborted();
    output.line(`Listing ${line.directory} (${line.text})`);
    let entries: ListedEntry[];
    try {
      entries = await method.list(listing, line.directory, signal);
    } catch (error) {
      signal.throwIfAborted();
      throw new Error(`${line.directory}: ${failureMessage(error, secrets)}`);
    }
    await selectAndRegister(deps, claim, { line, options, tokens, now }, entries, output, signal);
  }
}

type LineContext = { line: ListingLine; options: Map<string, string>; tokens: HostTokens; now: Date };

async function selectAndRegister(
  deps: RunDeps,
  claim: AcquisitionClaim,
  c: LineContext,
  entries: ListedEntry[],
  output: RunOutput,
  signal: AbortSignal,
) {
  const rules = rulesOf(c.line, c.options, (text) =>
    replaceTokens(text, { host: c.options, line: c.line.options, tokens: c.tokens, now: c.now }),
  );
  const option = (name: string) => lineOption(c.line, c.options, name);
  const requeue = requeueRuleOf(option);
  const taken: ListedEntry[] = [];
  for (const entry of entries) {
    const outcome = judge(entry, rules, c.now);
    if (outcome.selected) taken.push(entry);
    else output.entry(entry.name, `not selected: ${outcome.reason}`, NOT_SELECTED);
  }
  for (const { name: destination, sendsNowhere } of claim.destinations) {
    const named = taken.map((entry) => ({
      entry,
      ...nameOf(entry, c.line, c.options, { destination, tokens: c.tokens, now: c.now }),
    }));
    const before = named.length
      ? await deps.ctx.ports.repos.acquisition.acquiredBefore(destination, named)
      : new Map<string, AcquiredBefore>();
    for (const { entry, original, target, uniqueName } of named) {
      signal.throwIfAborted();
      const found = before.get(keyOf({ target, uniqueName }));
      const shown = `${entry.name} (${destination}/${target})`;
      if (entry.size === null) {
        output.entry(shown, 'not selected: size unknown', NOT_SELECTED);
        continue;
      }
      const again =
        found && requeue
          ? requeue({
              time1: found.time?.getTime() ?? -1,
              size1: found.size,
              time2: entry.time?.getTime() ?? -1,
              size2: entry.size,
              destination,
              target,
              original,
            })
          : false;
      if (found && !again) {
        output.entry(shown, `not selected: exists (DataFileId=${found.dataFileId})`, NOT_SELECTED);
        continue;
      }
      try {
        const { id, replaced } = await registerDataFile(
          deps.ctx,
          {
            destination,
            source: original,
            target,
            uniquename: uniqueName,
            metadata: metadataOf(option('metadata'), c),
            priority: priorityOf(option('priority')),
            lifetime: option('lifetime'),
            standby: yes(option('standby')),
            force: again,
          },
          {
            registeredBy: `acquisition:${claim.host.hostId}`,
            comment: `Acquired from host ${claim.host.hostId}`,
            acquired: { hostId: Number(claim.host.hostId), size: entry.size, time: entry.time, sendsNowhere },
          },
        );
        output.entry(
          shown,
          `selected: ${replaced || again ? 're-queued' : 'scheduled'} with DataFileId=${id}`,
          'selected',
        );
      } catch (error) {
        // A file the put refuses (an expiry already past, a name taken meanwhile) is told, not the end of the run.
        if (!isServiceError(error)) throw error;
        output.entry(shown, `not selected: ${error.message}`, NOT_SELECTED);
      }
    }
  }
}

function metadataOf(text: string | undefined, c: LineContext) {
  if (text === undefined || text.trim() === '') return undefined;
  return replaceTokens(text, { host: c.options, line: c.line.options, tokens: c.tokens, now: c.now });
}

/** The `$host[…]`, `$transferMethod[…]` and `$ectransModule[…]` values a line may use; never a password. */
function tokensOf({ host }: AcquisitionClaim): HostTokens {
  return {
    'host[id]': host.hostId,
    'host[name]': host.hostId,
    'host[nickname]': host.nickname,
    'host[host]': host.host,
    'host[login]': host.login,
    'transferMethod[name]': host.transferMethod ?? '',
    'ectransModule[name]': host.module ?? '',
  };
}
