import type { TransferMethods } from '../../core/dissemination/methods.ts';
import { fileMethod } from './file.ts';
import { ftpMethod } from './ftp.ts';
import { sftpMethod } from './sftp.ts';
import { testMethod } from './test.ts';

/** The transfer methods a Node mover offers, by the module name of a host's transfer method. */
export function nodeTransferMethods(options: { fileRoots: readonly string[] }): TransferMethods {
  return {
    file: fileMethod(options.fileRoots),
    ftp: ftpMethod('ftp'),
    ftps: ftpMethod('ftps'),
    sftp: sftpMethod(),
    test: testMethod(),
  };
}
