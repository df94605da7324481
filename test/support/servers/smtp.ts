import type { AddressInfo } from 'node:net';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { scaled } from '../time.ts';

/**
 * A real SMTP server for the tests (smtp-server, on 127.0.0.1 and a port of its own): it requires
 * the given user and password (AUTH PLAIN/LOGIN over the plain connection, as on loopback), parses
 * every mail with mailparser and keeps it with its envelope. `refuse` makes it answer 451 to mails.
 */
export interface ReceivedMail {
  /** The authenticated user of the session that sent it. */
  user: string | null;
  from: string;
  to: string[];
  parsed: ParsedMail;
  text: string;
  subject: string;
}

export interface SmtpReceiver {
  port: number;
  /** ECPDS_SMTP_URL for this server, with its credentials. */
  url: string;
  received: ReceivedMail[];
  /** While true, every mail is refused with a temporary failure. */
  refuse: boolean;
  /** The first mail to `address` not taken yet, waiting for it when none has come. */
  nextMailTo(address: string, timeoutMs?: number): Promise<ReceivedMail>;
  stop(): Promise<void>;
}

/** `port`: listen on this one (0: any), e.g. to start a server stopped again on its port. */
export async function startSmtpReceiver(credentials = { user: 'mailer', password: 'p@ss:w/rd' }, listenOn = 0) {
  const inbox: ReceivedMail[] = [];
  const waiters = new Set<() => void>();
  let refusing = false;

  const server = new SMTPServer({
    // Plain SMTP on loopback: smtp-server's own certificate would fail nodemailer's STARTTLS check.
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authOptional: false,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === credentials.user && auth.password === credentials.password) {
        callback(null, { user: auth.username });
      } else callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      if (refusing) {
        stream.resume();
        stream.on('end', () => {
          const refused = Object.assign(new Error('Mailbox unavailable, try later'), { responseCode: 451 });
          callback(refused);
        });
        return;
      }
      simpleParser(stream)
        .then((parsed) => {
          inbox.push({
            user: typeof session.user === 'string' ? session.user : null,
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            parsed,
            text: parsed.text ?? '',
            subject: parsed.subject ?? '',
          });
          for (const wake of waiters) wake();
          callback();
        })
        .catch((e: Error) => callback(e));
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenOn, '127.0.0.1', () => resolve());
  });
  server.on('error', () => {});
  const port = (server.server.address() as AddressInfo).port;
  const taken = new Set<ReceivedMail>();

  const receiver: SmtpReceiver = {
    port,
    url: `smtp://${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}`,
    received: inbox,
    get refuse() {
      return refusing;
    },
    set refuse(value: boolean) {
      refusing = value;
    },
    nextMailTo(address, timeoutMs = 15_000) {
      const find = () => inbox.find((m) => !taken.has(m) && m.to.includes(address));
      return new Promise<ReceivedMail>((resolve, reject) => {
        const check = () => {
          const mail = find();
          if (!mail) return false;
          taken.add(mail);
          waiters.delete(check);
          clearTimeout(timer);
          resolve(mail);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no mail to ${address} arrived`));
        }, scaled(timeoutMs));
        if (!check()) waiters.add(check);
      });
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return receiver;
}

/** The first https link of a mail's text. */
export const linkIn = (mail: ReceivedMail) => /https:\/\/\S+/.exec(mail.text)?.[0] ?? null;

/** The password line of the mail that gives a subscriber its password. */
export const passwordIn = (mail: ReceivedMail) => /password:\s+(\S+)/.exec(mail.text)?.[1] ?? null;
