import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import type { Mail, Mailer } from '../../core/ports.ts';
import { freePort } from '../support/processes.ts';

export interface ReceivedMail {
  to: string;
  subject: string;
  text: string;
}

/** A real SMTP server on 127.0.0.1 that keeps what it receives, parsed. */
export async function startSmtpReceiver() {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, done) {
      simpleParser(stream)
        .then((m) => {
          const to = Array.isArray(m.to) ? m.to[0] : m.to;
          received.push({ to: to?.value[0]?.address ?? '', subject: m.subject ?? '', text: m.text ?? '' });
          done();
        })
        .catch(done);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return { received, mailer: smtpMailer(port), close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** Sends through nodemailer to the SMTP server on this port (none listening: every send fails). */
export function smtpMailer(port: number): Mailer {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
  return {
    async send(mail: Mail) {
      await transport.sendMail({ from: 'portal@example.org', ...mail });
    },
  };
}

/** A mailer whose SMTP server is gone: the connection is refused. */
export const unreachableMailer = async () => smtpMailer(await freePort());
