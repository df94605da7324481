import { runOutput } from '../../core/acquisition/output.ts';
import * as apiClients from '../../core/api-clients/clients.ts';
import { changeTransfer, type TransferAction } from '../../core/dissemination/manual.ts';
import { type DestinationAction, setDestinationStatus } from '../../core/dissemination/operator.ts';
import { changePriority } from '../../core/dissemination/priority.ts';
import { listTransfers, showTransfer } from '../../core/dissemination/transfers.ts';
import * as metadataFields from '../../core/metadata/fields.ts';
import { exportNotes } from '../../core/metadata/notes.ts';
import { sweep as sweepAndPurge } from '../../core/retention/sweep.ts';
import type { CommandContext } from './cli-io.ts';
import { ConfigError, parseConfig } from './config.ts';
import { jsonLogger } from './logger.ts';
import { importNotifications } from './monitoring-import.ts';
import { nodeUploadStore, removeStaleMultipart } from './portal-uploads.ts';
import { openRuntime, type Runtime } from './runtime.ts';

/**
 * The bodies of the commands that open the database. Their arguments were checked by
 * cli-admin.ts before this module (and the database drivers it pulls in) was loaded.
 */

/** Who the audit trail names for a change made on the command line. */
export const CLI_ACTOR = 'cli';

/**
 * CLI commands log to stderr so their stdout stays machine-readable. A command a running server
 * runs for the command line (command-server.ts) uses that server's database and ports, so its
 * change is the server's own (sessions see it at their next request).
 */
export async function withRuntime<T>(ctx: CommandContext, work: (runtime: Runtime) => Promise<T>): Promise<T> {
  if (ctx.attached) return work(ctx.attached);
  const logger = jsonLogger((l) => ctx.io.stderr.write(l));
  const runtime = await openRuntime(parseConfig(ctx.io.env), logger, { hold: false });
  try {
    return await work(runtime);
  } finally {
    await runtime.close();
  }
}

export async function migrate(ctx: CommandContext) {
  await withRuntime(ctx, async () => ctx.out('Database migrated.'));
}

export type ClientAction = 'create' | 'list' | 'show' | 'update' | 'reset-secret' | 'delete';

export async function client(ctx: CommandContext, action: ClientAction, username: string, permissions?: string[]) {
  await withRuntime(ctx, async ({ ports }) => {
    switch (action) {
      case 'create': {
        const created = await apiClients.create(ports, CLI_ACTOR, {
          username,
          permissions: permissions ?? [],
          origin: 'cli',
        });
        return ctx.out(`Client '${created.username}' created. Its secret is shown this once:\n${created.secret}`);
      }
      case 'list':
        return ctx.out(await apiClients.list(ports));
      case 'show':
        return ctx.out(await apiClients.show(ports, username));
      case 'update':
        return ctx.out(await apiClients.setPermissions(ports, CLI_ACTOR, username, permissions ?? []));
      case 'reset-secret': {
        const reset = await apiClients.resetSecret(ports, CLI_ACTOR, username);
        const what = `New secret of '${reset.username}' (the old one no longer works), shown this once`;
        return ctx.out(`${what}:\n${reset.secret}`);
      }
      case 'delete':
        await apiClients.remove(ports, CLI_ACTOR, username);
        return ctx.out(`Client '${username}' deleted.`);
    }
  });
}

export async function destination(ctx: CommandContext, action: DestinationAction, name: string) {
  const statusCode = await withRuntime(ctx, ({ ports }) => setDestinationStatus(ports, CLI_ACTOR, name, action));
  ctx.out(`Destination '${name}' is now ${statusCode}.`);
}

export async function transferList(ctx: CommandContext, filter: { destination?: string; status?: string }) {
  ctx.out(await withRuntime(ctx, ({ ports }) => listTransfers(ports, filter)));
}

export async function transferChange(ctx: CommandContext, action: TransferAction, id: number) {
  const status = await withRuntime(ctx, ({ ports }) => changeTransfer(ports, CLI_ACTOR, id, action));
  ctx.out(`Transfer ${id} is now ${status}.`);
}

export async function transferPriority(ctx: CommandContext, id: number, priority: string) {
  const changed = await withRuntime(ctx, ({ ports }) => changePriority(ports, CLI_ACTOR, id, priority));
  ctx.out(`Transfer ${id} priority changed from ${changed.from} to ${changed.to}.`);
}

export async function transferShow(ctx: CommandContext, id: number) {
  ctx.out(await withRuntime(ctx, ({ ports }) => showTransfer(ports, id)));
}

export async function hostOutput(ctx: CommandContext, hostId: number) {
  ctx.out(await withRuntime(ctx, ({ ports }) => runOutput(ports, hostId)));
}

export async function webuser(ctx: CommandContext, grant: boolean, id: string, category: string) {
  // Imported here only: loading console-auth computes a scrypt hash (its timing decoy for
  // unknown users), which every other command would pay for at start-up.
  const { setCategory } = await import('../../core/console/sign-in.ts');
  await withRuntime(ctx, ({ ports }) => setCategory(ports, CLI_ACTOR, id, category, grant));
  ctx.out(grant ? `Category '${category}' assigned to '${id}'.` : `Category '${category}' removed from '${id}'.`);
}

export async function fieldsImport(ctx: CommandContext, definitions: unknown) {
  const result = await withRuntime(ctx, ({ ports }) => metadataFields.importFields(ports, CLI_ACTOR, definitions));
  ctx.out(`Fields imported: ${result.created} created, ${result.updated} updated.`);
}

export async function fieldsExport(ctx: CommandContext) {
  ctx.out(await withRuntime(ctx, ({ ports }) => metadataFields.exportFields(ports)));
}

export async function notesExport(ctx: CommandContext, destination: string | undefined) {
  const all = await withRuntime(ctx, async ({ ports }) => {
    if (destination && !(await ports.repos.destinations.exists(destination))) {
      throw new ConfigError(`Destination ${destination} not found`);
    }
    return exportNotes(ports, destination);
  });
  ctx.out(all);
}

export async function monitoringImport(ctx: CommandContext, file: string) {
  const counts = await withRuntime(ctx, ({ ports }) =>
    importNotifications(ports, file, (line) => ctx.io.stderr.write(line), {
      // A progress bar only where someone watches it: redrawn lines would litter a log file.
      tty: ctx.io.stderr.isTTY ? (text) => ctx.io.stderr.write(text) : undefined,
    }),
  );
  const { accepted, ignored, refused, bad } = counts;
  ctx.out(`Notifications: ${accepted} accepted, ${ignored} ignored, ${refused} refused, ${bad} bad lines.`);
}

export async function sweep(ctx: CommandContext) {
  const config = parseConfig(ctx.io.env);
  const { expired, purged, aborted } = await withRuntime(ctx, async ({ ports }) => ({
    ...(await sweepAndPurge(ports, config.retention)),
    aborted: await removeStaleMultipart(
      nodeUploadStore(config.portal.uploadDir, config.portal.multipart),
      ports.logger,
    ),
  }));
  ctx.out(`Expired transfers failed: ${expired}.`);
  ctx.out(`Purged: ${purged.transfers} transfers, ${purged.history} history rows, ${purged.dataFiles} data files.`);
  ctx.out(`Stale multipart uploads aborted: ${aborted}.`);
}
