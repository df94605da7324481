import { conflict, notFound } from '../common/errors.ts';
import { readOptions } from '../hosts/options.ts';
import type { Ctx } from '../ports.ts';
import type { RetrievalClaim } from '../retrieval/ports.ts';
import type { PutInput } from './handlers.ts';
import type { DuplicateHolds, RegisteredFile } from './ports.ts';
import type { PlannedTransfer, PutDestination } from './put-plan.ts';
import { displacedBy } from './requeue-on.ts';
import { wholeMatch } from './rule-lines.ts';

/**
 * One transfer: one statement, the common case. A file to retrieve is claimed in that statement for a
 * retriever of this process with a free place, when there is one: `retrieving` then says it is on its way.
 */
export async function registerOne(
  ctx: Ctx,
  input: PutInput,
  file: RegisteredFile,
  transfer: PlannedTransfer,
  comment?: string,
): Promise<{ id: number; replaced: boolean; retrieving: boolean }> {
  const { aliasedFrom: _none, ...fields } = transfer;
  const repo = ctx.ports.repos.dataFiles;
  const place = file.retrieve ? ctx.ports.localRetrievers.reserve() : null;
  let claimed: RetrievalClaim | null = null;
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      const outcome = place ? await repo.registerFetched(file, fields, place) : await repo.register(file, fields);
      if (outcome === 'no destination') throw notFound(`Destination ${input.destination} not found`);
      if (typeof outcome === 'number') return { id: outcome, replaced: false, retrieving: false };
      if (outcome !== 'taken') {
        claimed = outcome;
        return { id: outcome.dataFileId, replaced: false, retrieving: true };
      }
      const live = await repo.findLive(transfer.destination, transfer.target, transfer.uniqueName);
      if (!live) continue; // the holder was deleted meanwhile: try again
      if (!input.force) throw conflict(`DataFile already exists (DataFileId=${live.dataFileId})`);
      await repo.requeue(live.transferId, { ...file, comment: comment ?? FORCED_COMMENT }, fields);
      return { id: live.dataFileId, replaced: true, retrieving: false };
    }
    throw conflict(RACED);
  } finally {
    if (claimed) place?.take(claimed);
    else place?.release();
  }
}

/** A transfer per destination of the alias closure, or a requeueon destination: one transaction. */
export async function registerClosure(
  ctx: Ctx,
  input: PutInput,
  file: RegisteredFile,
  planned: PlannedTransfer[],
  holds: DuplicateHolds,
  comment?: string,
) {
  for (let attempt = 0; attempt < 3; attempt++) {
    const options = { force: input.force ?? false, forcedComment: comment ?? FORCED_COMMENT, holds };
    const outcome = await ctx.ports.repos.dataFiles.registerAll(file, planned, options);
    if (outcome === 'taken') continue;
    if ('taken' in outcome) throw conflict(`DataFile already exists (DataFileId=${outcome.taken})`);
    return outcome;
  }
  throw conflict(RACED);
}

const FORCED_COMMENT = 'Requeued by a forced put';
const RACED = 'DataFile could not be registered: the unique key kept changing, try again';

/** `scheduler.requeueon` of the destinations reached, with its pattern and ignore (reference §1.4 step 6). */
export function duplicateHolds(reach: Map<string, PutDestination>) {
  const rules = new Map<string, { rule: string; pattern: string; ignore: string | undefined }>();
  for (const [name, d] of reach) {
    const o = readOptions(d.data);
    const rule = o.get('scheduler.requeueon')?.trim();
    if (rule)
      rules.set(name, {
        rule,
        pattern: o.get('scheduler.requeuepattern') ?? '.*',
        ignore: o.get('scheduler.requeueignore'),
      });
  }
  const decide: DuplicateHolds = (destination, target, files) => {
    const r = rules.get(destination);
    if (!r || !wholeMatch(target, r.pattern) || (r.ignore !== undefined && wholeMatch(target, r.ignore))) return [];
    return displacedBy(r.rule, files);
  };
  return { active: (destination: string) => rules.has(destination), decide };
}
