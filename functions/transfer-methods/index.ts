import type { TransferMethods } from '../../core/dissemination/methods.ts';
import { azureMethod } from './azure.ts';
import { closingFetch } from './closing-fetch.ts';
import { fileMethod } from './file.ts';
import { ftpMethod } from './ftp.ts';
import { httpMethod } from './http.ts';
import { portalMethod } from './portal.ts';
import { s3Method } from './s3.ts';
import { sftpMethod } from './sftp.ts';
import { testMethod } from './test.ts';
import { webdavMethod } from './webdav.ts';

/** The transfer methods a Node mover offers, by the module name of a host's transfer method. */
export function nodeTransferMethods(options: { fileRoots: readonly string[] }): TransferMethods {
  return {
    file: fileMethod(options.fileRoots),
    ftp: ftpMethod('ftp'),
    ftps: ftpMethod('ftps'),
    sftp: sftpMethod(),
    s3: s3Method({ fetch: closingFetch }),
    http: httpMethod({ fetch: closingFetch }),
    azure: azureMethod({ fetch: closingFetch }),
    webdav: webdavMethod({ fetch: closingFetch }),
    test: testMethod(),
    portal: portalMethod(),
  };
}
