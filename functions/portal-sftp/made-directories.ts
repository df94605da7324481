/**
 * Directories made by MKDIR that no file is in yet, and when, shared by the SFTP channels of one user
 * on this server while one of them is open: a client uploading over several connections (rclone) makes
 * a folder on one and looks for it on another, as it would on a disk.
 */
export function madeDirectoriesByUser() {
  const byUser = new Map<string, { made: Map<string, Date>; channels: number }>();
  return {
    /** The user's directories for one channel; `release` once the channel is closed. */
    open(userId: string) {
      const shared = byUser.get(userId) ?? { made: new Map<string, Date>(), channels: 0 };
      shared.channels++;
      byUser.set(userId, shared);
      let released = false;
      return {
        made: shared.made,
        release() {
          if (released) return;
          released = true;
          if (--shared.channels === 0) byUser.delete(userId);
        },
      };
    },
  };
}
