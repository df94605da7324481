import type { Transporter } from 'nodemailer';
import type { Mail, Mailer } from '../../core/ports.ts';
import type { MailConfig } from './config.ts';

/** One plain address: no display name, no list, nothing an address parser could read as more recipients. */
const PLAIN_ADDRESS = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+$/;

/**
 * The portal's mail through the configured SMTP server (nodemailer: TLS, STARTTLS, authentication,
 * header encoding). A connection per mail: registrations are rare, and nothing stays open between
 * them. nodemailer is loaded at the first mail, not by every command that opens the runtime.
 */
export function smtpMailer(config: MailConfig): Mailer {
  let transport: Promise<Transporter> | null = null;
  const transportOf = () =>
    (transport ??= import('nodemailer').then(({ createTransport }) =>
      createTransport({
        host: config.host,
        ...(config.port !== null && { port: config.port }),
        secure: config.secure,
        requireTLS: config.requireTLS,
        ...(config.user !== null && { auth: { user: config.user, pass: config.password ?? '' } }),
        // A web request waits for the mail: a server that does not answer fails it in seconds, not minutes.
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 30_000,
        // The mails are plain text written here: never a file or URL for nodemailer to read.
        disableFileAccess: true,
        disableUrlAccess: true,
      }),
    ));
  return {
    async send(mail: Mail) {
      // nodemailer encodes headers; a line break in a subject or an address is still refused outright.
      if (/[\r\n]/.test(mail.subject)) throw new Error('a mail subject may not hold a line break');
      if (!PLAIN_ADDRESS.test(mail.to)) throw new Error('a mail goes to one plain address');
      await (await transportOf()).sendMail({
        from: config.from,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
      });
    },
  };
}
