import { constantTimeEqualText, keyedHash } from '../../core/common/crypto.ts';
import { utf8 } from '../../core/common/encoding.ts';
import type { PortalFile } from '../../core/portal/ports.ts';
import type { Ports } from '../../core/ports.ts';

/**
 * The upload form's confirmation: after an upload the browser goes back to the folder's page with
 * `?uploaded=<receipt>` per file, and the page shows the files as they were registered. A receipt
 * is the data file's id signed with the session's CSRF token: a registered file that is not listed
 * yet (scheduled later, in standby) is shown only to the session that uploaded it, never to whoever
 * guesses an id.
 */
export const UPLOADED_PARAMETER = 'uploaded';
/** The most files one page confirms (a form may send more; the listing shows them all anyway). */
const MOST_RECEIPTS = 20;

export interface UploadReceipt {
  dataFileId: number;
  replaced: boolean;
}

export interface UploadedFile {
  file: PortalFile;
  replaced: boolean;
}

const signed = (csrf: string, text: string) => keyedHash(utf8(csrf), `upload-receipt:${text}`).slice(0, 22);

export function receiptOf(csrf: string, receipt: UploadReceipt): string {
  const text = `${receipt.dataFileId}.${receipt.replaced ? 'r' : 'n'}`;
  return `${text}.${signed(csrf, text)}`;
}

/** The receipts of the query that this session signed; the others are ignored. */
export function readReceipts(values: readonly string[], csrf: string): UploadReceipt[] {
  const receipts: UploadReceipt[] = [];
  for (const value of values.slice(0, MOST_RECEIPTS)) {
    const match = /^(\d{1,15})\.([rn])\.(.+)$/.exec(value);
    if (match === null) continue;
    const [, id, replaced, tag] = match as unknown as [string, string, string, string];
    if (!constantTimeEqualText(tag, signed(csrf, `${id}.${replaced}`))) continue;
    receipts.push({ dataFileId: Number(id), replaced: replaced === 'r' });
  }
  return receipts;
}

/** The receipted files as registered now, those still in this directory (`prefix` of `destination`). */
export async function uploadedFiles(
  ports: Ports,
  destination: string,
  prefix: string,
  receipts: readonly UploadReceipt[],
): Promise<UploadedFile[]> {
  const found: UploadedFile[] = [];
  for (const receipt of receipts) {
    const file = await ports.repos.portal.registered(destination, receipt.dataFileId);
    if (file === null || !file.path.startsWith(prefix) || file.path.slice(prefix.length).includes('/')) continue;
    found.push({ file, replaced: receipt.replaced });
  }
  return found;
}
