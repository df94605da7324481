import { joinRemote, type RemoteFiles } from '../dissemination/deliver.ts';
import type { CheckFile } from '../dissemination/methods.ts';

/**
 * A host check over a method that writes by name (SFTP, FTP, a directory), once its session is logged in:
 * with a check file, its bytes are written under the host's directory, counted, and removed again. A
 * write that fails half-way is removed too (best effort), so that a check leaves nothing behind.
 */
export async function checkRemoteFiles(
  remote: RemoteFiles,
  directory: string,
  file: CheckFile | null,
  signal: AbortSignal,
): Promise<string> {
  if (file === null) return 'Connected and logged in';
  const path = joinRemote(directory, file.name);
  async function* bytes() {
    yield file!.bytes;
  }
  try {
    const written = await remote.write(path, bytes(), signal);
    if (written !== file.bytes.byteLength) {
      throw new Error(`Wrote ${written} of ${file.bytes.byteLength} bytes to ${path}`);
    }
  } catch (error) {
    await remote.remove(path).catch(() => undefined);
    throw error;
  }
  signal.throwIfAborted();
  await remote.remove(path).catch((error: unknown) => {
    throw new Error(`Wrote ${path} but could not remove it: ${error instanceof Error ? error.message : String(error)}`);
  });
  return `Connected, logged in, wrote ${path} (${file.bytes.byteLength} bytes) and removed it`;
}
