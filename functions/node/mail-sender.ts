import { randomUUID } from 'node:crypto';
import {
  DEFAULT_MAIL_SENDER_OPTIONS,
  type MailSender,
  type MailSenderOptions,
  startMailSender,
} from '../../core/notifications/sender.ts';
import { mailOutboxRepo } from '../../db/repositories/mail-outbox.ts';
import type { NodeConfig } from './config.ts';
import type { Runtime } from './runtime.ts';

/**
 * The server's mail sender (ECPDS_SMTP_URL set): the destinations' and hosts' mails of the outbox, through the
 * portal's mailer, linking to the console at ECPDS_PORTAL_URL (or `serverUrl`). It polls: a digest waits for
 * its window anyway, so no event needs to wake it.
 */
export function startNodeMailSender(
  runtime: Runtime,
  config: NodeConfig,
  serverUrl: string,
  options: MailSenderOptions = DEFAULT_MAIL_SENDER_OPTIONS,
): MailSender | null {
  const { ports } = runtime;
  if (!ports.mailer) return null;
  return startMailSender(
    {
      outbox: mailOutboxRepo(runtime.handle.db),
      mailer: ports.mailer,
      clock: ports.clock,
      logger: ports.logger,
      consoleOrigin: (config.portal.publicUrl ?? serverUrl).replace(/\/+$/, ''),
      newId: randomUUID,
    },
    options,
  );
}
