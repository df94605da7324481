import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../functions/env.ts';
import { parseStoreConfig, type S3StoreConfig } from '../../functions/store/config.ts';

const KEYS = { ECPDS_STORE_S3_ACCESS_KEY_ID: 'AKID', ECPDS_STORE_S3_SECRET_ACCESS_KEY: 'store-secret-123' };
const s3 = (env: Record<string, string | undefined>) => parseStoreConfig(env) as S3StoreConfig;
const refused = (env: Record<string, string | undefined>) => {
  try {
    parseStoreConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('accepted');
};

describe('store configuration: a directory', () => {
  it('the default directory when ECPDS_STORE_URL is unset or empty', () => {
    expect(parseStoreConfig({})).toEqual({ kind: 'directory' });
    expect(parseStoreConfig({ ECPDS_STORE_URL: ' ' })).toEqual({ kind: 'directory' });
  });

  it('an absolute path or a file:/// URL', () => {
    expect(parseStoreConfig({ ECPDS_STORE_URL: '/var/lib/ecpds/store/' })).toEqual({
      kind: 'directory',
      path: '/var/lib/ecpds/store',
    });
    expect(parseStoreConfig({ ECPDS_STORE_URL: 'file:///srv/store%20a' })).toEqual({
      kind: 'directory',
      path: '/srv/store a',
    });
  });

  it('refuses a relative path, another scheme, a remote file: URL, and S3 variables without s3://', () => {
    expect(refused({ ECPDS_STORE_URL: 'store' })).toMatch(/^ECPDS_STORE_URL must be .*relative path 'store'/);
    expect(refused({ ECPDS_STORE_URL: 'gs://bucket' })).toMatch(/^ECPDS_STORE_URL .*scheme 'gs'/);
    expect(refused({ ECPDS_STORE_URL: 'file://host/x' })).toMatch(/^ECPDS_STORE_URL .*names no local path/);
    expect(refused({ ECPDS_STORE_S3_ENDPOINT: 'http://127.0.0.1:9000' })).toBe(
      'ECPDS_STORE_S3_ENDPOINT is set, but ECPDS_STORE_URL names no s3:// bucket',
    );
  });
});

describe('store configuration: S3', () => {
  it('bucket and prefix, the endpoint, the region and the store credentials', () => {
    const config = s3({
      ECPDS_STORE_URL: 's3://ecpds-store/edge/prod/',
      ECPDS_STORE_S3_ENDPOINT: 'http://127.0.0.1:9000/',
      ECPDS_STORE_S3_REGION: 'eu-central-1',
      ...KEYS,
      AWS_ACCESS_KEY_ID: 'other',
      AWS_SECRET_ACCESS_KEY: 'other-secret',
      AWS_SESSION_TOKEN: 'other-token',
    });
    expect(config).toMatchObject({
      kind: 's3',
      bucket: 'ecpds-store',
      prefix: 'edge/prod',
      endpoint: 'http://127.0.0.1:9000',
      region: 'eu-central-1',
    });
    expect(config.credentials.accessKeyId).toBe('AKID');
    expect(config.credentials.secretAccessKey).toBe('store-secret-123');
    expect(config.credentials.sessionToken).toBeNull();
  });

  it('AWS by default: no endpoint, AWS_REGION or us-east-1, the AWS_* credentials with their session token', () => {
    const env = {
      ECPDS_STORE_URL: 's3://bkt',
      AWS_ACCESS_KEY_ID: 'A',
      AWS_SECRET_ACCESS_KEY: 'S',
      AWS_SESSION_TOKEN: 'T',
    };
    const config = s3(env);
    expect(config).toMatchObject({ bucket: 'bkt', prefix: '', endpoint: null, region: 'us-east-1' });
    expect([config.credentials.accessKeyId, config.credentials.secretAccessKey]).toEqual(['A', 'S']);
    expect(config.credentials.sessionToken).toBe('T');
    expect(s3({ ...env, AWS_REGION: 'ap-south-1' }).region).toBe('ap-south-1');
  });

  it('the secret and token are in neither JSON nor inspect', () => {
    const config = s3({
      ECPDS_STORE_URL: 's3://bkt',
      AWS_ACCESS_KEY_ID: 'A',
      AWS_SECRET_ACCESS_KEY: 'S3cr3t',
      AWS_SESSION_TOKEN: 'T0k3n',
    });
    for (const text of [JSON.stringify(config), inspect(config, { depth: 5, showHidden: true })]) {
      expect(text).toContain('A');
      expect(text).not.toContain('S3cr3t');
      expect(text).not.toContain('T0k3n');
    }
  });

  it('refuses what is wrong, naming the variable and never echoing credentials', () => {
    expect(refused({ ECPDS_STORE_URL: 's3://bkt' })).toMatch(/needs credentials: ECPDS_STORE_S3_ACCESS_KEY_ID/);
    expect(refused({ ECPDS_STORE_URL: 's3://bkt', ECPDS_STORE_S3_ACCESS_KEY_ID: 'A' })).toBe(
      'ECPDS_STORE_S3_ACCESS_KEY_ID and ECPDS_STORE_S3_SECRET_ACCESS_KEY must be given together',
    );
    const withUser = refused({ ECPDS_STORE_URL: 's3://AKID:hunter2@bkt/p', ...KEYS });
    expect(withUser).toMatch(/^ECPDS_STORE_URL .*takes no credentials/);
    expect(withUser).not.toContain('hunter2');
    expect(refused({ ECPDS_STORE_URL: 's3://b', ...KEYS })).toMatch(/'b' is no bucket name/);
    expect(refused({ ECPDS_STORE_URL: 's3://bkt/a/../b', ...KEYS })).toMatch(/'\.' or '\.\.' segment/);
    expect(refused({ ECPDS_STORE_URL: 's3://bkt/p?x=1', ...KEYS })).toMatch(/no query or fragment/);
    const endpoint = (value: string) =>
      refused({ ECPDS_STORE_URL: 's3://bkt', ECPDS_STORE_S3_ENDPOINT: value, ...KEYS });
    expect(endpoint('127.0.0.1:9000')).toMatch(/^ECPDS_STORE_S3_ENDPOINT must be .*(not a URL|scheme)/);
    expect(endpoint('ftp://h')).toMatch(/^ECPDS_STORE_S3_ENDPOINT .*scheme 'ftp:'/);
    const withPassword = endpoint('http://u:pw-456@h:9000');
    expect(withPassword).toMatch(/takes no credentials/);
    expect(withPassword).not.toContain('pw-456');
    expect(refused({ ECPDS_STORE_URL: 's3://bkt', ECPDS_STORE_S3_REGION: 'EU West', ...KEYS })).toMatch(
      /^ECPDS_STORE_S3_REGION must be a region name/,
    );
    expect(refused({ ECPDS_STORE_URL: 's3://bkt', AWS_REGION: 'x y', ...KEYS })).toMatch(/^AWS_REGION must be/);
  });
});
