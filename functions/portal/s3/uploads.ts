import { createHash } from 'node:crypto';
import { STREAMING_PAYLOAD, STREAMING_UNSIGNED_TRAILER } from '../../../core/portal/s3-signature.ts';
import { startPortalTransfer } from '../../../core/portal/transfers.ts';
import { type MultipartStore, quotaExceeded, receiveUpload } from '../upload.ts';
import { awsChunkedBody } from './chunked.ts';
import { notImplemented, S3Failure } from './errors.ts';
import type { S3Request } from './index.ts';
import { S3 } from './who.ts';
import { completedParts, completeMultipartXml, initiateMultipartXml, xmlAnswer } from './xml.ts';

/**
 * Uploads through the S3 endpoint, as the HTTPS portal's (functions/portal/upload.ts): stored
 * whole, then registered as datafile/put registers a file, counted as the user's transfers. A
 * payload hash or Content-MD5 the client gives is checked before the file is placed. A multipart
 * upload's parts count against the upload quota as they arrive, together with the user's other
 * running uploads (the file they make counts no more), within the store's limits: parts, their
 * size, uploads open at once.
 */

const MAX_COMPLETE_BODY = 1024 * 1024;

export async function putObject(r: S3Request, key: string) {
  const payload = payloadOf(r);
  const uploaded = await receiveUpload(
    uploadDeps(r),
    r.visitor,
    { destination: r.bucket, path: key },
    payload.body,
    payload.length,
  );
  await r.ports.repos.portal.recordChecksum(uploaded.dataFileId, payload.md5());
  return new Response(null, {
    status: 200,
    headers: {
      etag: `"${payload.md5()}"`,
      'x-amz-version-id': 'null',
      'x-ecpds-data-file-id': String(uploaded.dataFileId),
    },
  });
}

export async function createMultipart(r: S3Request, key: string) {
  const store = multipartStore(r);
  const { maxOpenUploads } = store.limits;
  if ((await store.openUploads(r.visitor.identity.userId)) >= maxOpenUploads) {
    throw new S3Failure(
      400,
      'TooManyUploads',
      `At most ${maxOpenUploads} multipart uploads may be open at once; complete or abort one first.`,
    );
  }
  const uploadId = await store.create({ userId: r.visitor.identity.userId, destination: r.bucket, path: key });
  return xmlAnswer(initiateMultipartXml(r.bucket, key, uploadId));
}

export async function uploadPart(r: S3Request, key: string, uploadId: string, partNumber: string) {
  const { store, number } = await partTarget(r, key, uploadId, partNumber);
  const payload = payloadOf(r);
  const part = await storePart(r, store, uploadId, number, payload.body, payload.length);
  if (payload.length !== null && part.bytes !== payload.length) {
    throw new S3Failure(
      400,
      'IncompleteBody',
      'You did not provide the number of bytes specified by the Content-Length HTTP header.',
    );
  }
  return new Response(null, { status: 200, headers: { etag: `"${part.md5}"` } });
}

/** The store of the user's own upload, and the part number asked for (1 to the store's maximum). */
export async function partTarget(r: S3Request, key: string, uploadId: string, partNumber: string) {
  const store = await ownUpload(r, key, uploadId);
  return { store, number: partNumberOf(store, partNumber) };
}

function partNumberOf(store: MultipartStore, partNumber: string) {
  const { maxParts } = store.limits;
  if (!/^\d{1,5}$/.test(partNumber) || Number(partNumber) < 1 || Number(partNumber) > maxParts) {
    throw new S3Failure(400, 'InvalidArgument', `Part number must be an integer between 1 and ${maxParts}, inclusive`);
  }
  return Number(partNumber);
}

/**
 * Stores one part of an upload, from a request's body or a copy's source: it counts against the
 * user's connections while it comes, and its bytes against the upload quota, shared with the user's
 * other uploads and parts running.
 */
export async function storePart(
  r: S3Request,
  store: MultipartStore,
  uploadId: string,
  partNumber: number,
  body: AsyncIterable<Uint8Array>,
  length: number | null,
) {
  const { maxPartBytes } = store.limits;
  const tooLarge = () =>
    new S3Failure(
      400,
      'EntityTooLarge',
      `Your proposed upload exceeds the maximum allowed size of a part (${maxPartBytes} bytes).`,
    );
  if (length !== null && length > maxPartBytes) throw tooLarge();
  const transfer = await startPortalTransfer(r.ports, r.visitor.identity, {
    protocol: S3,
    server: r.options.serverName,
    address: r.address,
    action: 'upload',
  });
  let bytes = 0;
  async function* counted() {
    for await (const chunk of body) {
      bytes += chunk.byteLength;
      if (bytes > maxPartBytes) throw tooLarge();
      if (transfer.allow(chunk.byteLength) < chunk.byteLength) throw quotaExceeded();
      yield chunk;
    }
  }
  try {
    if (length !== null && length > transfer.left()) throw quotaExceeded();
    return await store.receivePart(uploadId, partNumber, counted());
  } finally {
    await transfer.finish({ bytes, file: null });
  }
}

export async function completeMultipart(r: S3Request, key: string, uploadId: string) {
  const store = await ownUpload(r, key, uploadId);
  const text = await smallBody(r);
  const listed = completedParts(text);
  if (listed === null || listed.length === 0) {
    throw new S3Failure(
      400,
      'MalformedXML',
      'The XML you provided was not well-formed or did not validate against our published schema.',
    );
  }
  if (listed.some((p, i) => i > 0 && p.partNumber <= listed[i - 1]!.partNumber)) {
    throw new S3Failure(400, 'InvalidPartOrder', 'The list of parts was not in ascending order.');
  }
  const stored = new Map((await store.parts(uploadId)).map((p) => [p.partNumber, p]));
  const parts = listed.map((p) => {
    const part = stored.get(p.partNumber);
    if (part === undefined || part.md5 !== p.etag.toLowerCase()) {
      throw new S3Failure(
        400,
        'InvalidPart',
        'One or more of the specified parts could not be found or its entity tag did not match.',
      );
    }
    return part;
  });
  const total = parts.reduce((n, p) => n + p.bytes, 0);
  const numbers = parts.map((p) => p.partNumber);
  const whole = createHash('md5');
  async function* hashed() {
    for await (const chunk of store.read(uploadId, numbers)) {
      whole.update(chunk);
      yield chunk;
    }
  }
  const target = { destination: r.bucket, path: key };
  const uploaded = await receiveUpload({ ...uploadDeps(r), counted: true }, r.visitor, target, hashed(), total);
  await r.ports.repos.portal.recordChecksum(uploaded.dataFileId, whole.digest('hex'));
  await store.remove(uploadId);
  const md5s = Buffer.concat(parts.map((p) => Buffer.from(p.md5, 'hex')));
  const etag = `"${createHash('md5').update(md5s).digest('hex')}-${parts.length}"`;
  return xmlAnswer(completeMultipartXml(new URL(r.c.req.url).pathname, r.bucket, key, etag));
}

export async function abortMultipart(r: S3Request, key: string, uploadId: string) {
  const store = await ownUpload(r, key, uploadId);
  await store.remove(uploadId);
  return new Response(null, { status: 204 });
}

function multipartStore(r: S3Request) {
  const store = r.options.uploads?.multipart;
  if (store === undefined) throw notImplemented('Uploads are not available on this server');
  return store;
}

/** The store of an upload of this user to this bucket and key; NoSuchUpload for any other. */
async function ownUpload(r: S3Request, key: string, uploadId: string) {
  const store = multipartStore(r);
  const upload = await store.get(uploadId);
  if (
    upload === null ||
    upload.userId !== r.visitor.identity.userId ||
    upload.destination !== r.bucket ||
    upload.path !== key
  ) {
    throw new S3Failure(404, 'NoSuchUpload', 'The specified multipart upload does not exist.');
  }
  return store;
}

export const uploadDeps = (r: S3Request) => {
  if (r.options.uploads === null) throw notImplemented('Uploads are not available on this server');
  return {
    ports: r.ports,
    store: r.options.uploads,
    serverName: r.options.serverName,
    address: r.address,
    requestId: r.requestId,
    protocol: S3,
  };
};

/**
 * The request's payload: its bytes (an aws-chunked body decoded, its chunks' signatures checked),
 * its declared length, and its MD5 once read. A hex x-amz-content-sha256 or a Content-MD5 that the
 * bytes do not match fails the body at its end, before anything is placed.
 */
function payloadOf(r: S3Request) {
  if (r.options.uploads === null)
    throw new S3Failure(501, 'NotImplemented', 'Uploads are not available on this server');
  const header = (name: string) => r.c.req.header(name);
  const signed = r.visitor.signed;
  const payloadHash = signed?.payloadHash ?? header('x-amz-content-sha256') ?? 'UNSIGNED-PAYLOAD';
  const raw = r.c.req.raw.body;
  let body: AsyncIterable<Uint8Array> = raw === null ? empty() : (raw as unknown as AsyncIterable<Uint8Array>);
  let length = lengthOf(header('content-length'));
  if (payloadHash === STREAMING_PAYLOAD || payloadHash === STREAMING_UNSIGNED_TRAILER) {
    const key = r.visitor.key;
    const signing = payloadHash === STREAMING_PAYLOAD && signed !== null && key !== null ? { signed, key } : null;
    if (payloadHash === STREAMING_PAYLOAD && signing === null) {
      throw new S3Failure(400, 'InvalidRequest', 'A streaming payload must be signed');
    }
    body = awsChunkedBody(body, signing, header('x-amz-trailer') ?? null);
    length = lengthOf(header('x-amz-decoded-content-length'));
  } else if (payloadHash.startsWith('STREAMING-')) {
    throw notImplemented(`The payload ${payloadHash} is not implemented; send UNSIGNED-PAYLOAD or its SHA-256`);
  }
  const sha256 = /^[0-9a-f]{64}$/.test(payloadHash) ? payloadHash : null;
  const contentMd5 = header('content-md5') ?? null;
  const md5 = createHash('md5');
  let digest: string | null = null;
  async function* checked() {
    const sha = sha256 === null ? null : createHash('sha256');
    for await (const chunk of body) {
      md5.update(chunk);
      sha?.update(chunk);
      yield chunk;
    }
    digest = md5.digest('hex');
    if (sha !== null && sha.digest('hex') !== sha256) {
      throw new S3Failure(
        400,
        'XAmzContentSHA256Mismatch',
        "The provided 'x-amz-content-sha256' header does not match what was computed.",
      );
    }
    if (contentMd5 !== null && Buffer.from(digest, 'hex').toString('base64') !== contentMd5.trim()) {
      throw new S3Failure(400, 'BadDigest', 'The Content-MD5 you specified did not match what we received.');
    }
  }
  return { body: checked(), length, md5: () => digest ?? '' };
}

const lengthOf = (text: string | undefined) => (text !== undefined && /^\d{1,15}$/.test(text) ? Number(text) : null);

async function* empty(): AsyncIterable<Uint8Array> {}

async function smallBody(r: S3Request) {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of payloadOf(r).body) {
    size += chunk.byteLength;
    if (size > MAX_COMPLETE_BODY) throw new S3Failure(400, 'MaxMessageLengthExceeded', 'Your request was too big.');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
