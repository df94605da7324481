import type { AuthorizedKey } from '../../../core/portal/authorized-keys.ts';
import { Csrf } from '../layout.tsx';
import { incomingPath } from './incoming-parts.tsx';
import { when } from './monitor-parts.tsx';

/** The user's public keys for the portal's SFTP server: listed by fingerprint, added, removed. */
export function KeysTable(props: { id: string; csrf: string; mode: string; keys: AuthorizedKey[] }) {
  const { id, csrf, mode, keys } = props;
  return (
    <section aria-labelledby="keys">
      <h2 id="keys">SFTP public keys</h2>
      {mode !== 'standard-login' && (
        <p class="muted">Keys open only standard-login users' accounts; this user's mode takes none.</p>
      )}
      {keys.length === 0 ? (
        <p>{mode === 'standard-login' ? 'No key: the user logs in to SFTP with its password only.' : 'No key.'}</p>
      ) : (
        <div class="table-wrap">
          <table class="monitor">
            <thead>
              <tr>
                <th scope="col">Fingerprint</th>
                <th scope="col">Type</th>
                <th scope="col">Comment</th>
                <th scope="col">Added</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr>
                  <td>
                    <code>{k.fingerprint}</code>
                  </td>
                  <td>{k.algorithm}</td>
                  <td>{k.comment}</td>
                  <td>{when(k.addedAt ?? null)}</td>
                  <td>
                    <form class="inline" method="post" action={`${incomingPath(id)}/keys/remove`}>
                      <Csrf token={csrf} />
                      <input type="hidden" name="fingerprint" value={k.fingerprint} />
                      <button type="submit" class="secondary" aria-label={`Remove key ${k.fingerprint}`}>
                        Remove
                      </button>
                    </form>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <form method="post" action={`${incomingPath(id)}/keys`}>
        <Csrf token={csrf} />
        <label>
          Add a key (one line of an OpenSSH <code>.pub</code> file)
          <input type="text" name="key" required placeholder="ssh-ed25519 AAAA... user@host" />
        </label>
        <button type="submit">Add key</button>
      </form>
    </section>
  );
}
