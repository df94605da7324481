import { Notice } from './layout.tsx';

/** The public address of an open-access user's files. */
export const openAccessHome = (userId: string) => `/portal/home/${encodeURIComponent(userId)}/`;

/**
 * Says that a user's files are public (open access): anyone with the address reads them, with a
 * browser or any download tool, without logging in. For the top of that user's listing pages, and
 * the page a login form leads to for such a user.
 */
export function OpenAccessNotice({ userId }: { userId: string }) {
  const home = openAccessHome(userId);
  return (
    <Notice>
      <p>
        The files of <strong>{userId}</strong> are open to everyone: no login is needed.
      </p>
      <p>
        Browse or download them at <a href={home}>{home}</a>, with a browser or a tool such as curl, wget or rclone.
      </p>
    </Notice>
  );
}
