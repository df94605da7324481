import type { TransferMethod } from '../../core/dissemination/methods.ts';

/**
 * The `portal` method (the reference's ectrans module of that name), for destinations whose users
 * fetch their files from the data portal: a delivery moves no byte and ends DONE, leaving the file
 * listed for them. The mover has checked the source is there at its registered size; the stream
 * is left unread and closed by the mover.
 */
export function portalMethod(): TransferMethod {
  return {
    async send(_host, _file, _source, signal) {
      signal.throwIfAborted();
      return { sent: 0, md5: null };
    },
    async close() {},
  };
}
