import { isServiceError } from '../../core/common/errors.ts';
import * as portalAdmin from '../../core/portal/admin.ts';
import * as keyAdmin from '../../core/portal/key-admin.ts';
import { PORTAL_OPTIONS } from '../../core/portal/options.ts';
import type { PortalOperation } from '../../core/portal/ports.ts';
import { CLI_ACTOR, withRuntime } from './admin-commands.ts';
import type { CommandContext } from './cli-io.ts';
import { ConfigError } from './config.ts';

/** The bodies of `ecpds-edge incoming ...`; their arguments were checked by cli-incoming.ts. */

const listed = (ops: readonly string[]) => (ops.length === 0 ? 'none (the user cannot log in)' : ops.join(', '));

export async function permissionList(ctx: CommandContext, userId: string) {
  ctx.out(await withRuntime(ctx, ({ ports }) => portalAdmin.listPermissions(ports, userId)));
}

export async function permissionChange(
  ctx: CommandContext,
  userId: string,
  action: 'grant' | 'revoke',
  operations: PortalOperation[],
) {
  const change = action === 'grant' ? portalAdmin.grantPermissions : portalAdmin.revokePermissions;
  const after = await withRuntime(ctx, ({ ports }) => change(ports, CLI_ACTOR, userId, operations));
  ctx.out(`Portal permissions of '${userId}': ${listed(after)}.`);
}

export async function optionList(ctx: CommandContext, userId: string) {
  ctx.out(await withRuntime(ctx, ({ ports }) => portalAdmin.listOptions(ports, userId)));
}

/** The value alone on stdout, for scripts; an option that is not set exits 1, as `git config` does. */
export async function optionShow(ctx: CommandContext, userId: string, name: string) {
  const options = await withRuntime(ctx, ({ ports }) => portalAdmin.listOptions(ports, userId));
  const value = options[name];
  if (value !== undefined) return ctx.out(value);
  ctx.error(`${name} is not set for '${userId}': the default applies (${PORTAL_OPTIONS[name]})`);
  ctx.exitCode = 1;
}

export async function optionSet(ctx: CommandContext, userId: string, name: string, value: string | null) {
  const changed = await withRuntime(ctx, ({ ports }) => portalAdmin.setOption(ports, CLI_ACTOR, userId, name, value));
  const shown = value?.trim();
  if (shown === undefined)
    ctx.out(changed ? `Option ${name} of '${userId}' removed.` : `Option ${name} of '${userId}' was not set.`);
  else
    ctx.out(
      changed ? `Option ${name} of '${userId}' set to ${shown}.` : `Option ${name} of '${userId}' is already ${shown}.`,
    );
}

export async function subscriberList(ctx: CommandContext, userId: string) {
  ctx.out(await withRuntime(ctx, ({ ports }) => portalAdmin.listSubscribers(ports, userId)));
}

export async function subscriberChange(ctx: CommandContext, userId: string, action: 'approve' | 'revoke', id: number) {
  const subscriber = await withRuntime(ctx, async ({ ports }) => {
    if (action === 'revoke') return portalAdmin.revoke(ports, CLI_ACTOR, userId, id);
    try {
      return await portalAdmin.approve(ports, CLI_ACTOR, userId, id);
    } catch (e) {
      if (isServiceError(e) && e.kind === 'unavailable' && ports.mailer === null) {
        throw new ConfigError(
          `cannot approve subscriber ${id}: approval e-mails its password, and no SMTP server is configured ` +
            '(ECPDS_SMTP_URL, ECPDS_MAIL_FROM); it stays verified',
        );
      }
      throw e;
    }
  });
  ctx.out(
    action === 'approve'
      ? `Subscriber ${id} of '${userId}' approved; its password was e-mailed to ${subscriber.email}.`
      : `Subscriber ${id} of '${userId}' revoked.`,
  );
}

export async function keyList(ctx: CommandContext, userId: string) {
  const keys = await withRuntime(ctx, ({ ports }) => keyAdmin.listKeys(ports, userId));
  if (keys.length === 0) return ctx.out(`'${userId}' has no public keys: it logs in to SFTP with its password only.`);
  // As `ssh-keygen -l` prints them: bits are left out, the type says enough here.
  for (const key of keys)
    ctx.out(`${key.fingerprint} ${key.comment === '' ? '(no comment)' : key.comment} (${key.algorithm})`);
}

export async function keyAdd(ctx: CommandContext, userId: string, line: string) {
  const key = await withRuntime(ctx, ({ ports }) => keyAdmin.addKey(ports, CLI_ACTOR, userId, line));
  ctx.out(`Key ${key.fingerprint} (${key.algorithm}) added to '${userId}'.`);
}

export async function keyRemove(ctx: CommandContext, userId: string, fingerprint: string) {
  await withRuntime(ctx, ({ ports }) => keyAdmin.removeKey(ports, CLI_ACTOR, userId, fingerprint));
  ctx.out(`Key ${fingerprint} removed from '${userId}'.`);
}
