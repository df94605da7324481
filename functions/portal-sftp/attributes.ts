import type { Attributes, FileEntry } from 'ssh2';
import type { PortalIdentity } from '../../core/portal/access.ts';
import type { PortalEntry, PortalFile } from '../../core/portal/ports.ts';

/**
 * What SFTP says of the tree's entries: files and directories, writable where the user may put
 * files, with a size and a time only for the `size` and `mtime` permissions (as the HTTPS listing):
 * a directory's time is its newest file's (core/portal/folders.ts). The owner is the user, for `ls -l`.
 */

const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;

type Who = Pick<PortalIdentity, 'permissions' | 'userId'>;

export function directoryAttributes(who: Who, modifiedAt: Date | null = null): Attributes {
  const mode = S_IFDIR | (who.permissions.includes('put') ? 0o755 : 0o555);
  return { mode, uid: 0, gid: 0, ...timesOf(modifiedAt, who) } as Attributes;
}

export function fileAttributes(file: PortalFile, who: Who): Attributes {
  const attrs: Partial<Attributes> = {
    mode: S_IFREG | (who.permissions.includes('put') ? 0o644 : 0o444),
    uid: 0,
    gid: 0,
  };
  if (who.permissions.includes('size')) attrs.size = file.size;
  return { ...attrs, ...timesOf(file.modifiedAt, who) } as Attributes;
}

/** A time as SFTP's seconds, for a user with `mtime`; none when unknown (never 1970's zero). */
function timesOf(at: Date | null, who: Who): Partial<Attributes> {
  if (at === null || !who.permissions.includes('mtime')) return {};
  const seconds = Math.floor(at.getTime() / 1000);
  return { atime: seconds, mtime: seconds };
}

export function entryOf(entry: PortalEntry, who: Who): FileEntry {
  const attrs =
    entry.type === 'file' ? fileAttributes(entry.file, who) : directoryAttributes(who, entry.modifiedAt ?? null);
  return { filename: entry.name, longname: longName(entry.name, attrs, who.userId), attrs };
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The line `ls -l` shows for an entry, as OpenSSH's server writes it. */
function longName(name: string, attrs: Attributes, owner: string) {
  const dir = (attrs.mode & S_IFDIR) !== 0;
  const bits = attrs.mode & 0o777;
  const rwx = [6, 3, 0]
    .map((shift) => {
      const b = (bits >> shift) & 7;
      return `${b & 4 ? 'r' : '-'}${b & 2 ? 'w' : '-'}${b & 1 ? 'x' : '-'}`;
    })
    .join('');
  let when = '            ';
  if (attrs.mtime !== undefined) {
    const d = new Date(attrs.mtime * 1000);
    const recent = Math.abs(Date.now() - d.getTime()) < 182 * 86_400_000;
    const day = String(d.getUTCDate()).padStart(2, ' ');
    const tail = recent
      ? `${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')}`
      : ` ${d.getUTCFullYear()}`;
    when = `${MONTHS[d.getUTCMonth()]} ${day} ${tail}`;
  }
  const size = String(attrs.size ?? 0).padStart(8, ' ');
  const user = owner.slice(0, 8).padEnd(8, ' ');
  return `${dir ? 'd' : '-'}${rwx}    1 ${user} ${user} ${size} ${when} ${name}`;
}
