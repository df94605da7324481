import type { Context } from 'hono';
import { type PortalIdentity, PortalLoginRefused, portalLogin } from '../../../core/portal/access.ts';
import { portalMode } from '../../../core/portal/login.ts';
import { readSignature, type SignedRequest, signatureMatches, signingKey } from '../../../core/portal/s3-signature.ts';
import type { Ports } from '../../../core/ports.ts';
import { S3Failure } from './errors.ts';

/** The protocol's name for `portal.excludeProtocols`, the DEA and INH lines and the traffic. */
export const S3 = 's3';

/** Who an S3 request is from, and the signature it came with (null: anonymous). */
export interface S3Visitor {
  identity: PortalIdentity;
  signed: SignedRequest | null;
  /** The key the request was signed with: an aws-chunked body's chunks are signed with it too. */
  key: Uint8Array | null;
}

/**
 * Who is asking: a signed request (Authorization header or presigned URL) goes through the portal's
 * login check with its signature as the proof of the password (a wrong one counts as a failed
 * authentication, as a wrong password does); an anonymous one is let in only to a bucket of an
 * open-access user, as that user, by the same check without credentials.
 */
export async function s3Visitor(c: Context, ports: Ports, address: string, bucket: string | null): Promise<S3Visitor> {
  const url = new URL(c.req.url);
  const request = {
    method: c.req.method,
    path: url.pathname,
    query: url.search.slice(1),
    // A request made in the process (tests, Workers' own fetch) may have no Host header: its URL's.
    header: (name: string) => c.req.header(name) ?? (name === 'host' ? url.host : undefined),
  };
  const signed = readSignature(request, ports.clock());
  if (signed !== null && 'code' in signed) throw new S3Failure(signed.status, signed.code, signed.message);
  if (signed === null) return { identity: await anonymous(ports, address, bucket), signed: null, key: null };

  let tried = false;
  let matched = false;
  let key: Uint8Array | null = null;
  const proof = async (password: string) => {
    tried = true;
    matched = await signatureMatches(signed, password);
    if (matched) key = await signingKey(password, signed.date, signed.region);
    return matched;
  };
  try {
    const identity = await portalLogin(ports, {
      login: signed.accessKey,
      password: null,
      proof,
      address,
      protocol: S3,
    });
    return { identity, signed, key };
  } catch (e) {
    if (!(e instanceof PortalLoginRefused) || e.overLimit || matched) throw e;
    // As S3 answers: an access key it cannot check a signature of, or a signature that is wrong.
    if (!tried)
      throw new S3Failure(
        403,
        'InvalidAccessKeyId',
        'The AWS Access Key Id you provided does not exist in our records.',
      );
    throw new S3Failure(
      403,
      'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided. ' +
        'Check your key and signing method.',
    );
  }
}

/** The open-access user a bucket is public by (the first by id when several are), logged in without credentials. */
async function anonymous(ports: Ports, address: string, bucket: string | null): Promise<PortalIdentity> {
  if (bucket !== null) {
    const users = await ports.repos.incomingUsers.list({ destination: bucket });
    const open = users.find((u) => u.active && portalMode(u.portalService) === 'open-access');
    if (open !== undefined) {
      const identity = await portalLogin(ports, { login: open.id, password: null, address, protocol: S3 });
      if (identity.mode === 'open-access') return identity;
    }
  }
  throw new S3Failure(403, 'AccessDenied', 'Access Denied');
}
