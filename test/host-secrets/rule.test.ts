import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox } from '../../core/common/crypto.ts';
import { END_OF_PROPERTIES, readOptions } from '../../core/hosts/options.ts';
import {
  hasClearSecrets,
  isSealedValue,
  isSecretOption,
  revealSecretOptions,
  SEALED_PREFIX,
  sealGivenOptions,
  sealSecretOptions,
  secretOptionValues,
  setOptionSealed,
  withoutSecretOptions,
} from '../../core/hosts/secret-options.ts';

const box = new SecretBox(new Uint8Array(randomBytes(32)));

describe('which host options are secrets', () => {
  // Every option a transfer method reads that carries a credential (functions/transfer-methods).
  const CREDENTIALS_THE_METHODS_READ = [
    'sftp.privateKey',
    'sftp.passPhrase',
    'ftp.password',
    'ftps.password',
    'http.authheader',
    'azure.sasUrl',
    'azure.sasSubscriptionKey',
  ];
  // Credentials under other names, and the same names in other spellings.
  const OTHER_SECRETS = [
    's3.secretKey',
    's3.secret_access_key',
    's3.sessionToken',
    'http.Authorization',
    'http.bearerToken',
    'x.api-key',
    'x.apiKey',
    'x.clientSecret',
    'x.accountKey',
    'x.subscription_key',
    'ectrans.credentials',
    'ftp.PASSWD',
    'sftp.PRIVATE_KEY',
    'sftp.pass-phrase',
    'sftp.key.password',
    'password',
  ];
  // What the methods read that is no secret: settings, names, public fingerprints, logins.
  const NOT_SECRETS = [
    'sftp.port',
    'sftp.fingerPrint',
    'sftp.usetmp',
    'sftp.prefix',
    'sftp.suffix',
    'sftp.mkdirs',
    'sftp.ignoreCheck',
    'sftp.chmod',
    'ftp.port',
    'ftp.login',
    'ftps.login',
    'ftp.passive',
    'ftp.deleteOnRename',
    'ftps.connectionType',
    'ftps.strict',
    's3.bucketName',
    's3.prefix',
    's3.region',
    's3.url',
    's3.scheme',
    's3.enablePathStyleAccess',
    's3.multipartSize',
    's3.partSize',
    's3.numUploadThreads',
    's3.accessKey',
    'http.scheme',
    'http.port',
    'http.usePost',
    'r2.binding',
    'test.delay',
    'test.fail',
    'test.error',
    'ectrans.connectTimeOut',
    'ectrans.putTimeOut',
  ];

  it.each([...CREDENTIALS_THE_METHODS_READ, ...OTHER_SECRETS])('%s is a secret', (name) => {
    expect(isSecretOption(name)).toBe(true);
  });

  it.each(NOT_SECRETS)('%s is not a secret', (name) => {
    expect(isSecretOption(name)).toBe(false);
  });

  it('judges the key, not the module', () => {
    expect(isSecretOption('password.port')).toBe(false);
    expect(isSecretOption('token.value')).toBe(false);
  });
});

describe('secret options in the data text', () => {
  const KEY =
    '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----';
  const TAIL = `${END_OF_PROPERTIES}\nsftp.password = "script text, never touched"\n`;
  // As the reference writes a key: a quoted value over several lines.
  const DATA =
    '# keys\nftp.password = hunter2\nsftp.port = "22"\n' +
    `sftp.privateKey = "${KEY}"\ns3.secretKey = "wJalr \\"q\\" XUtnFEMI"\n${TAIL}`;

  it('seals every secret value in a line of its own, and keeps every other byte', async () => {
    const sealed = await sealSecretOptions(DATA, box);
    const lines = sealed.split('\n');
    expect(lines[0]).toBe('# keys');
    expect(lines[1]).toMatch(/^ftp\.password = "\{sealed\}v1:[^"]+"$/);
    expect(lines[2]).toBe('sftp.port = "22"');
    expect(lines[3]).toMatch(/^sftp\.privateKey = "\{sealed\}v1:[^"]+"$/);
    expect(lines[4]).toMatch(/^s3\.secretKey = "\{sealed\}v1:[^"]+"$/);
    expect(lines.slice(5).join('\n')).toBe(TAIL);
    for (const clear of ['hunter2', 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmU=', 'XUtnFEMI']) {
      expect(sealed).not.toContain(clear);
    }
    expect([...readOptions(sealed).values()].filter(isSealedValue)).toHaveLength(3);
    expect(hasClearSecrets(DATA)).toBe(true);
    expect(hasClearSecrets(sealed)).toBe(false);
  });

  it('seals stored text once: a second pass changes nothing', async () => {
    const sealed = await sealSecretOptions(DATA, box);
    expect(await sealSecretOptions(sealed, box)).toBe(sealed);
    expect(await sealSecretOptions('sftp.port = "22"\n', box)).toBe('sftp.port = "22"\n');
  });

  it('reveals what it sealed, value for value', async () => {
    const revealed = await revealSecretOptions(await sealSecretOptions(DATA, box), box);
    expect(Object.fromEntries(readOptions(revealed))).toEqual(Object.fromEntries(readOptions(DATA)));
    expect(revealed.endsWith(TAIL)).toBe(true);
    expect(secretOptionValues(revealed).sort()).toEqual(['hunter2', KEY, 'wJalr "q" XUtnFEMI'].sort());
  });

  it('leaves the secret options out, lines and all', () => {
    expect(withoutSecretOptions(DATA)).toBe(`# keys\nsftp.port = "22"\n${TAIL}`);
    expect(withoutSecretOptions('ftp.password = "x"\n')).toBe('');
    expect(withoutSecretOptions('')).toBe('');
  });

  it("seals a client's value as given, even one that looks sealed", async () => {
    const looksSealed = `${SEALED_PREFIX}v1:AAAA:BBBB`;
    const given = await sealGivenOptions(`ftp.password = "${looksSealed}"`, box);
    expect(given).not.toContain(looksSealed);
    expect(readOptions(await revealSecretOptions(given, box)).get('ftp.password')).toBe(looksSealed);
  });

  it('sets one option: sealed when it is a secret, in clear otherwise, other clear secrets sealed too', async () => {
    let data = await setOptionSealed('ftp.password = "old"\n', 'sftp.passPhrase', 'pass phrase', box);
    data = await setOptionSealed(data, 'sftp.port', '2222', box);
    expect(data).not.toContain('old');
    expect(data).not.toContain('pass phrase');
    expect(data).toContain('sftp.port = "2222"');
    expect(Object.fromEntries(readOptions(await revealSecretOptions(data, box)))).toEqual({
      'ftp.password': 'old',
      'sftp.passPhrase': 'pass phrase',
      'sftp.port': '2222',
    });
  });

  it('says which option another key cannot unseal, without its value', async () => {
    const sealed = await sealSecretOptions('sftp.passPhrase = "mine"', box);
    const other = new SecretBox(new Uint8Array(randomBytes(32)));
    await expect(revealSecretOptions(sealed, other)).rejects.toThrow(
      "Host option sftp.passPhrase cannot be unsealed with this deployment's secret key",
    );
  });
});
