import { isServiceError } from '../../core/common/errors.ts';
import * as portalAdmin from '../../core/portal/admin.ts';
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
