import { notFound } from '../common/errors.ts';
import { del, type PutInput, registerDataFile } from '../data-files/handlers.ts';
import { parseDuration } from '../data-files/schedule.ts';
import { readFlag } from '../dissemination/method-options.ts';
import { readOptions } from '../hosts/options.ts';
import type { Ctx, Ports } from '../ports.ts';
import type { PortalIdentity } from './access.ts';
import type { PortalFile, TreeViewer } from './ports.ts';
import { DEFAULT_TMP_PATTERN } from './sftp-paths.ts';

/** The history comment of a file registered by an upload to the portal, as the reference writes it. */
export const VIA_DATA_PORTAL = 'Via Data Portal';

/**
 * What a destination's `incoming.*` options (in its `data`, the reference's names) ask of the files
 * uploaded to it: `standby` (held until released), `priority` (0 to 99), `lifetime` (a duration, as
 * datafile/put takes it) and `delay` (queued that long after the upload). A value that can't be read
 * is left out, so the default applies, as for the reference's other options.
 */
export function incomingOptions(data: string): Pick<PutInput, 'standby' | 'priority' | 'lifetime' | 'at'> {
  const options = readOptions(data);
  const chosen: Pick<PutInput, 'standby' | 'priority' | 'lifetime' | 'at'> = {};
  const standby = options.get('incoming.standby');
  if (standby !== undefined && readFlag(standby, false)) chosen.standby = true;
  const priority = options.get('incoming.priority')?.trim();
  if (priority !== undefined && /^\d{1,2}$/.test(priority)) chosen.priority = Number(priority);
  const lifetime = options.get('incoming.lifetime')?.trim();
  if (lifetime !== undefined && (parseDuration(lifetime) ?? 0) > 0) chosen.lifetime = lifetime;
  const delay = options.get('incoming.delay')?.trim();
  if (delay !== undefined && (parseDuration(delay) ?? 0) > 0) chosen.at = `+${delay}`;
  return chosen;
}

/**
 * Whether the file name (the last segment of a path) is a temporary one by the destination's
 * `incoming.tmpPattern` (a regular expression matching whole names; by default a leading `.` or a
 * `.tmp` ending). A pattern that does not compile is left aside for the default, as other options.
 */
export function isTemporaryName(data: string, path: string): boolean {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const given = readOptions(data).get('incoming.tmpPattern')?.trim();
  for (const source of given ? [given, DEFAULT_TMP_PATTERN] : [DEFAULT_TMP_PATTERN]) {
    try {
      return new RegExp(`^(?:${source})$`, 'u').test(name);
    } catch {}
  }
  return false;
}

/** Who registers and deletes files through the portal: the user, as `portal:<user>` (a data file's registeredBy). */
const portalCtx = (ports: Ports, who: PortalIdentity, requestId: string): Ctx => ({
  ports,
  requestId,
  caller: { username: uploaderOf(who.userId), showSensitiveInfo: false },
});
const uploaderOf = (userId: string) => `portal:${userId}`;

/**
 * Who the tree is read for (TreeViewer): a held upload (HOLD: standby, or a temporary name until its
 * rename) shows on every protocol only to the user who uploaded it, who has to find it to rename or
 * check it; to others once released. An open-access visitor, who may be anyone, sees none.
 */
export const treeViewer = (who: Pick<PortalIdentity, 'userId' | 'mode'>): TreeViewer =>
  who.mode === 'open-access' ? null : uploaderOf(who.userId);

/**
 * Registers an uploaded file (already in place at `source`) for its destination as datafile/put
 * does, with the destination's `incoming.*` options. A PUT replaces what the path held: a live
 * transfer of the same target is given the new file (a forced put). Answers the data file and its
 * transfer, for the answer and the INH line.
 */
export async function registerUpload(
  ports: Ports,
  who: PortalIdentity,
  upload: {
    destination: string;
    path: string;
    source: string;
    requestId: string;
    /** A temporary name (isTemporaryName) registers in standby: SFTP uploads, renamed once whole. */
    temporaryNames?: boolean;
  },
): Promise<{ dataFileId: number; replaced: boolean; file: PortalFile | null; temporary: boolean }> {
  const destination = await ports.repos.destinations.get(upload.destination);
  if (destination === null) throw notFound(`Destination ${upload.destination} not found`);
  const input: PutInput = {
    destination: upload.destination,
    source: upload.source,
    target: upload.path,
    force: true,
    ...incomingOptions(destination.data),
  };
  const temporary = upload.temporaryNames === true && isTemporaryName(destination.data, upload.path);
  if (temporary) input.standby = true;
  const { id, replaced } = await registerDataFile(portalCtx(ports, who, upload.requestId), input, {
    comment: VIA_DATA_PORTAL,
  });
  return { dataFileId: id, replaced, file: await ports.repos.portal.registered(upload.destination, id), temporary };
}

/** Deletes a file of the tree as datafile/del does: the data file is marked deleted, its transfers stopped. */
export async function deletePortalFile(ports: Ports, who: PortalIdentity, file: PortalFile, requestId: string) {
  await del({ ctx: portalCtx(ports, who, requestId), input: { id: file.dataFileId } });
}
