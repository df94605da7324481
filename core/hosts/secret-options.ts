import type { SecretBox } from '../common/crypto.ts';
import type { MethodName } from '../dissemination/method-options.ts';
import { type OptionEntry, optionEntries, optionLine, rewriteOptions, setOption } from './options.ts';

/**
 * Every option each transfer method reads from its own `module.` options as a credential (see
 * functions/transfer-methods): secret whatever its name. The Azure SAS gateway's URL is one as a
 * whole: it may carry a key (`code=`, `sig=`) in its query. Logins and the host's own password
 * are no options; S3, R2 and WebDAV take theirs from the host.
 */
export const METHOD_CREDENTIAL_OPTIONS = {
  sftp: ['privateKey', 'passPhrase'],
  ftp: ['password'],
  ftps: ['password'],
  s3: [],
  http: ['authheader'],
  r2: [],
  azure: ['sasUrl', 'sasSubscriptionKey'],
  webdav: [],
  file: [],
  test: [],
  portal: [],
} as const satisfies Record<MethodName, readonly string[]>;

/**
 * The words that make a host option a secret. An option is one when its key (the name after
 * `module.`, or the whole name of an entry without a dot) holds one of them, or is a key of
 * METHOD_CREDENTIAL_OPTIONS, ignoring case and any `_`, `-` or `.`: `sftp.privateKey`,
 * `sftp.passPhrase`, `ftp.password`, `http.authheader`, `s3.secretKey`, `x.api_key`,
 * `y.accessToken`, `azure.sasSubscriptionKey`. The S3 access key id is the host's login, which the
 * ERR lines show as UserId, as the reference does.
 */
export const SECRET_WORDS = [
  'password',
  'passwd',
  'passphrase',
  'privatekey',
  'secret',
  'token',
  'authheader',
  'authorization',
  'credential',
  'apikey',
  'subscriptionkey',
  'accountkey',
  'sasurl',
] as const;

const normalisedKey = (key: string) => key.toLowerCase().replace(/[_.-]/g, '');

const CREDENTIAL_KEYS: ReadonlySet<string> = new Set(
  Object.values(METHOD_CREDENTIAL_OPTIONS).flatMap((keys) => keys.map(normalisedKey)),
);

export function isSecretOption(name: string): boolean {
  const dot = name.indexOf('.');
  const key = normalisedKey(dot > 0 ? name.slice(dot + 1) : name);
  return CREDENTIAL_KEYS.has(key) || SECRET_WORDS.some((word) => key.includes(word));
}

/**
 * A secret option is stored as `name = "{sealed}v1:<iv>:<data>"`: its value sealed with the
 * deployment's SecretBox, in a line of the usual format, so the rest of `data` keeps its bytes.
 */
export const SEALED_PREFIX = '{sealed}';
const SEALED = /^\{sealed\}v1:[A-Za-z0-9+/]+={0,2}:[A-Za-z0-9+/]+={0,2}$/;

export const isSealedValue = (value: string) => SEALED.test(value);

const sealValue = async (box: SecretBox, value: string) => `${SEALED_PREFIX}${await box.encrypt(value)}`;

async function sealWhere(data: string, box: SecretBox, pick: (entry: OptionEntry) => boolean): Promise<string> {
  const sealed = new Map<number, string>();
  for (const entry of optionEntries(data)) {
    if (isSecretOption(entry.name) && pick(entry)) sealed.set(entry.first, await sealValue(box, entry.value));
  }
  if (sealed.size === 0) return data;
  return rewriteOptions(data, (e) => {
    const value = sealed.get(e.first);
    return value === undefined ? undefined : optionLine(e.name, value);
  });
}

/** Stored options: every secret still in clear is sealed; sealed ones stay as they are (idempotent). */
export const sealSecretOptions = (data: string, box: SecretBox) => sealWhere(data, box, (e) => !isSealedValue(e.value));

/** Whether `data` holds a secret option in clear. */
export const hasClearSecrets = (data: string) =>
  optionEntries(data).some((e) => isSecretOption(e.name) && !isSealedValue(e.value));

/**
 * Options a client sends (a backup restored): every secret value is sealed as given, even one
 * that looks sealed. Answers never carry sealed values, so a client's value is always clear text.
 */
export const sealGivenOptions = (data: string, box: SecretBox) => sealWhere(data, box, () => true);

/** Sets one option of stored `data`, sealed when it is a secret; any secret left in clear is sealed too. */
export async function setOptionSealed(data: string, name: string, value: string, box: SecretBox): Promise<string> {
  const stored = isSecretOption(name) ? await sealValue(box, value) : value;
  return sealSecretOptions(setOption(data, name, stored), box);
}

/** `data` with its secret options unsealed: for a send, and for clients with showSensitiveInfo. */
export async function revealSecretOptions(data: string, box: SecretBox): Promise<string> {
  if (!data.includes(SEALED_PREFIX)) return data;
  const clear = new Map<number, string>();
  for (const entry of optionEntries(data)) {
    if (!isSecretOption(entry.name) || !isSealedValue(entry.value)) continue;
    try {
      clear.set(entry.first, await box.decrypt(entry.value.slice(SEALED_PREFIX.length)));
    } catch {
      throw new Error(`Host option ${entry.name} cannot be unsealed with this deployment's secret key`);
    }
  }
  return rewriteOptions(data, (e) => {
    const value = clear.get(e.first);
    return value === undefined ? undefined : optionLine(e.name, value);
  });
}

/** `data` without its secret options (their lines left out): for clients without showSensitiveInfo. */
export const withoutSecretOptions = (data: string) =>
  rewriteOptions(data, (e) => (isSecretOption(e.name) ? null : undefined));

/** The values of the secret options of (unsealed) `data`. */
export const secretOptionValues = (data: string) =>
  optionEntries(data)
    .filter((e) => isSecretOption(e.name))
    .map((e) => e.value);
