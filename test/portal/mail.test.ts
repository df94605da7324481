import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, parseMail } from '../../functions/node/config.ts';
import { smtpMailer } from '../../functions/node/mail.ts';
import { openRuntime } from '../../functions/node/runtime.ts';
import { type SmtpReceiver, startSmtpReceiver } from '../support/servers/smtp.ts';
import { scaled } from '../support/time.ts';

/** ECPDS_SMTP_URL and ECPDS_MAIL_FROM, and the mailer over nodemailer against a real SMTP server. */
let smtp: SmtpReceiver;
beforeAll(async () => {
  smtp = await startSmtpReceiver({ user: 'relay user', password: 'p@ss:w/rd%' });
});
afterAll(() => smtp?.stop());

const FROM = 'portal@example.org';

describe('the mail settings', () => {
  it('are off when neither variable is set', () => {
    expect(parseConfig({}).mail).toBeNull();
  });

  it('read smtp and smtps URLs, with their %-encoded credentials, into the mailer settings', () => {
    const config = parseConfig({
      ECPDS_SMTP_URL: 'smtps://relay%20user:p%40ss%3Aw%2Frd@mail.example.org',
      ECPDS_MAIL_FROM: 'Data Portal <portal@example.org>',
      ECPDS_PORTAL_URL: 'https://data.example.org',
    });
    expect(config.mail).toEqual({
      host: 'mail.example.org',
      port: null,
      secure: true,
      user: 'relay user',
      password: 'p@ss:w/rd',
      requireTLS: false,
      from: 'Data Portal <portal@example.org>',
    });
    expect(parseMail('smtp://mail.example.org:2525', FROM)).toMatchObject({ port: 2525, secure: false, user: null });
    expect(parseMail('smtp://[::1]:25', FROM)).toMatchObject({ host: '::1', port: 25 });
  });

  it('require STARTTLS when a password goes to a server beyond this host', () => {
    expect(parseMail('smtp://u:p@mail.example.org', FROM)?.requireTLS).toBe(true);
    expect(parseMail('smtp://mail.example.org', FROM)?.requireTLS).toBe(false);
    expect(parseMail('smtp://u:p@127.0.0.1:2525', FROM)?.requireTLS).toBe(false);
    expect(parseMail('smtp://u:p@localhost', FROM)?.requireTLS).toBe(false);
  });

  it('stop the start with a clear message that never repeats the password', () => {
    const refused: Array<[string | undefined, string | undefined, RegExp]> = [
      ['http://user:SECRET-PW@mail.example.org', FROM, /smtp:\/\/.*got the scheme 'http:'/],
      ['user:SECRET-PW@mail', FROM, /not a URL|scheme/],
      ['smtp://user:SECRET-PW@', FROM, /no host|not a URL/],
      ['smtp://user:SECRET-PW@mail.example.org/path?x=1', FROM, /no path, query or fragment/],
      ['smtp://user:SECRET-PW%zz@mail.example.org', FROM, /malformed %-escape/],
      ['smtp://:SECRET-PW@mail.example.org', FROM, /a password but no user/],
      ['smtp://user:SECRET-PW@mail.example.org', undefined, /needs ECPDS_MAIL_FROM/],
      [undefined, FROM, /ECPDS_MAIL_FROM is set without ECPDS_SMTP_URL/],
      ['smtp://user:SECRET-PW@mail.example.org', 'portal@example.org\r\nBcc: x@example.org', /ECPDS_MAIL_FROM must be/],
      ['smtp://user:SECRET-PW@mail.example.org', 'no address', /ECPDS_MAIL_FROM must be/],
    ];
    for (const [url, from, message] of refused) {
      const env = { ECPDS_SMTP_URL: url, ECPDS_MAIL_FROM: from, ECPDS_PORTAL_URL: 'https://data.example.org' };
      let error: unknown;
      try {
        parseConfig(env);
      } catch (e) {
        error = e;
      }
      expect(error, `${url} ${from}`).toBeInstanceOf(ConfigError);
      expect((error as Error).message, `${url} ${from}`).toMatch(message);
      expect((error as Error).message).not.toContain('SECRET-PW');
      expect((error as Error).message).not.toContain('\r');
    }
  });
});

describe('the SMTP mailer', () => {
  const mailer = () => smtpMailer(parseMail(smtp.url, 'Data Portal <portal@example.org>')!);

  it('sends a plain-text mail, authenticated with the URL credentials', async () => {
    await mailer().send({ to: 'reader@example.org', subject: 'Über data', text: 'Hello,\n\nline two\n' });
    const mail = await smtp.nextMailTo('reader@example.org');
    expect(mail).toMatchObject({ user: 'relay user', from: 'portal@example.org', to: ['reader@example.org'] });
    expect(mail.subject).toBe('Über data');
    expect(mail.text).toBe('Hello,\n\nline two\n');
    expect(mail.parsed.from?.value).toEqual([{ address: 'portal@example.org', name: 'Data Portal' }]);
  });

  it('refuses a line break in a subject and anything but one plain address, sending nothing', async () => {
    const before = smtp.received.length;
    const send = (to: string, subject: string) => mailer().send({ to, subject, text: 'x' });
    await expect(send('reader@example.org', 'Hi\r\nBcc: other@example.org')).rejects.toThrow(/line break/);
    await expect(send('reader@example.org', 'Hi\nthere')).rejects.toThrow(/line break/);
    for (const to of ['a@example.org, b@example.org', 'Name <a@example.org>', 'a@example.org\r\nBcc: b@example.org']) {
      await expect(send(to, 'Hi'), to).rejects.toThrow(/one plain address/);
    }
    expect(smtp.received.length).toBe(before);
  });

  it('fails, without the password in its message, when the credentials are wrong', async () => {
    const wrong = smtp.url.replace(encodeURIComponent('p@ss:w/rd%'), 'Wrong-Secret');
    const error = await smtpMailer(parseMail(wrong, FROM)!)
      .send({ to: 'reader@example.org', subject: 'x', text: 'x' })
      .then(
        () => null,
        (e: Error) => e,
      );
    expect(error).toBeInstanceOf(Error);
    expect(error!.message).not.toContain('Wrong-Secret');
  });
});

describe('the public address of the registration mails', () => {
  it('is required with mail, which turns registration on: the start stops with a clear message', () => {
    const mail = { ECPDS_SMTP_URL: 'smtp://mail.example.org', ECPDS_MAIL_FROM: FROM };
    expect(() => parseConfig(mail)).toThrow(ConfigError);
    expect(() => parseConfig(mail)).toThrow(/ECPDS_SMTP_URL turns on .*registration.*set ECPDS_PORTAL_URL/);
    expect(parseConfig({ ...mail, ECPDS_PORTAL_URL: 'https://data.example.org/dds/' }).portal.publicUrl).toBe(
      'https://data.example.org/dds',
    );
    expect(parseConfig({}).portal.publicUrl).toBeNull();
    expect(() => parseConfig({ ...mail, ECPDS_PORTAL_URL: 'ftp://data.example.org' })).toThrow(/ECPDS_PORTAL_URL/);
  });

  it('comes with limits of registrations per address and per e-mail, which the environment may change', () => {
    expect(parseConfig({}).portal.registrationLimits).toMatchObject({ perAddress: 10, perEmail: 3 });
    const env = { ECPDS_PORTAL_REGISTRATIONS_PER_ADDRESS: '25', ECPDS_PORTAL_REGISTRATIONS_PER_EMAIL: '1' };
    expect(parseConfig(env).portal.registrationLimits).toMatchObject({ perAddress: 25, perEmail: 1 });
    expect(() => parseConfig({ ECPDS_PORTAL_REGISTRATIONS_PER_EMAIL: '0' })).toThrow(
      /ECPDS_PORTAL_REGISTRATIONS_PER_EMAIL must be an integer from 1/,
    );
  });
});

describe("the Node runtime's ports", () => {
  it(
    'send mail through ECPDS_SMTP_URL, and have no mailer without it',
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-portal-mail-'));
      const logger = { info: () => {}, warn: () => {}, error: () => {} };
      const env = {
        ECPDS_DATA_DIR: dir,
        ECPDS_DEMO: '0',
        ECPDS_SMTP_URL: smtp.url,
        ECPDS_MAIL_FROM: FROM,
        ECPDS_PORTAL_URL: 'https://data.example.org',
      };
      try {
        const runtime = await openRuntime(parseConfig(env), logger, { hold: false });
        try {
          await runtime.ports.mailer!.send({ to: 'runtime@example.org', subject: 'From the runtime', text: 'x' });
          expect((await smtp.nextMailTo('runtime@example.org')).user).toBe('relay user');
        } finally {
          await runtime.close();
        }
        const without = await openRuntime(parseConfig({ ECPDS_DATA_DIR: dir }), logger, { hold: false });
        expect(without.ports.mailer).toBeNull();
        await without.close();
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
    scaled(120_000),
  );
});
