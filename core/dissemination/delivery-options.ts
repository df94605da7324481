/**
 * The delivery options a method applies around the upload, with the reference's names
 * (`JSftpModule`, `FtpModule`): an MD5 sidecar, a command run over SSH, raw FTP commands.
 */
export interface DeliveryExtras {
  /** Write `<final name><ext>` holding the MD5 hex of the delivered bytes; null for none. */
  sidecarExtension: string | null;
  /** `sftp.execCmd` with `$filename` already replaced, or null. */
  execCommand: (finalPath: string) => string | null;
  /** `sftp.execCode`: the exit code the command must end with. */
  execCode: number;
  /** `ftp.prePutCmd`, split at `;`, `$filename` = the final name; run before the upload. */
  prePutCommands: (finalPath: string) => string[];
  /** `ftp.postPutCmd`, split at `;`, `$filename` = the name written; run before the rename. */
  postPutCommands: (writtenPath: string) => string[];
}

/**
 * `md5Ext` names the sidecar's extension. As in the reference, the sidecar is written when the
 * mover has a checksum to write: `md5Ext` set, or `ectrans.createChecksum` (then `.md5`).
 */
export function deliveryExtras(raw: ReadonlyMap<string, string>, createChecksum: boolean): DeliveryExtras {
  const ext = raw.get('md5Ext')?.trim() ?? '';
  const exec = raw.get('execCmd')?.trim() ?? '';
  const code = Number.parseInt(raw.get('execCode')?.trim() ?? '', 10);
  return {
    sidecarExtension: ext !== '' && ext.toLowerCase() !== 'none' ? ext : createChecksum ? '.md5' : null,
    execCommand: (finalPath) => (exec === '' || exec === 'none' ? null : withFilename(exec, finalPath)),
    execCode: Number.isInteger(code) ? code : 0,
    prePutCommands: (finalPath) => commands(raw.get('prePutCmd'), finalPath),
    postPutCommands: (writtenPath) => commands(raw.get('postPutCmd'), writtenPath),
  };
}

const withFilename = (text: string, path: string) => text.split('$filename').join(path);

function commands(text: string | undefined, path: string): string[] {
  if (text === undefined || text.trim() === '') return [];
  return withFilename(text, path)
    .split(';')
    .map((command) => command.trim())
    .filter((command) => command !== '');
}
