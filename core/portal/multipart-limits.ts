/**
 * How far the multipart uploads of S3 may go on a server: S3's own bounds (10,000 parts of at most
 * 5 GiB) unless configured lower, a number of uploads a user may have open at once, and how long an
 * upload may stay open before it is aborted and its parts removed. Their bytes count against the
 * user's upload quota as each part arrives, shared with the user's other running uploads.
 */
export interface MultipartLimits {
  /** The highest part number, and so the most parts an upload has. */
  maxParts: number;
  maxPartBytes: number;
  /** Uploads a user may have begun and neither completed nor aborted. */
  maxOpenUploads: number;
  /** An upload open longer than this (since its last part) is aborted. */
  staleAfterMs: number;
}

export const S3_MAX_PARTS = 10_000;
export const S3_MAX_PART_BYTES = 5 * 1024 ** 3;

export const DEFAULT_MULTIPART_LIMITS: MultipartLimits = {
  maxParts: S3_MAX_PARTS,
  maxPartBytes: S3_MAX_PART_BYTES,
  maxOpenUploads: 100,
  staleAfterMs: 24 * 3600_000,
};
