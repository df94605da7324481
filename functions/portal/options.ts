import type { Context } from 'hono';
import type { SourceReader } from '../../core/dissemination/send.ts';
import type { Ports } from '../../core/ports.ts';
import type { PortalSessionUser } from './session.ts';
import type { UploadStore } from './upload.ts';

/** What the data portal's routes need from the shell that serves them. */
export interface PortalOptions {
  /** The ports of a request (see AppOptions.portsFor). */
  portsFor(c: Context): Promise<Ports> | Ports;
  /** The caller's address: the login's failed-authentication limits, DEA and INH lines. */
  clientAddress(c: Context): string;
  /** This server's name (the mover's): INH lines, and the connections counted across servers. */
  serverName: string;
  /** The files' bytes: the movers' source reader, with byte ranges. */
  sources: SourceReader;
  /** Where uploads are stored; null: this server takes none (501). */
  uploads: UploadStore | null;
  /**
   * A download's body that nothing reads for this long is taken as abandoned: its transfer ends
   * there (connection freed, INH line for the bytes sent). For Workers, where the runtime may drop
   * the body of a client that went away without cancelling it. Left out: a body waits for its
   * reader as long as the connection lasts (Node cancels it when the client goes away).
   */
  abandonAfterMs?: number;
  /**
   * How long a download under way goes on its last check of the user (ECPDS_PORTAL_RECHECK_MS, as an
   * SFTP session): a change made by another server is seen within it, one made here at once.
   */
  recheckMs?: number;
  /**
   * The domain of the S3 endpoint's virtual-host style (ECPDS_PORTAL_S3_DOMAIN): a request whose
   * Host is `<bucket>.<domain>` addresses that bucket, its key being the path after /portal/s3/.
   * Left out: path style only.
   */
  s3Domain?: string | null;
  /** Who a browser session (the login form's cookie) is; left out, only Basic logins and open access. */
  sessionIdentity?(c: Context): Promise<PortalSessionUser | null>;
}
