import type { OptionView } from '../../../core/portal/admin.ts';
import { PORTAL_OPERATIONS, type PortalOperation, type Subscriber } from '../../../core/portal/ports.ts';
import { Csrf } from '../layout.tsx';
import { when } from './monitor-parts.tsx';

/** The sections of an incoming user's console page that change its portal access. */

export const incomingPath = (id: string) => `/console/incoming/${encodeURIComponent(id)}`;

const OPERATION_HELP: Record<PortalOperation, string> = {
  dir: 'list directories',
  get: 'download files',
  mtime: 'see modification times',
  size: 'see sizes',
  put: 'upload files (registers them for dissemination)',
  delete: 'delete files',
  mkdir: 'make directories',
  rename: 'rename files',
  rmdir: 'remove directories',
};

export const MODE_HELP: Record<string, string> = {
  'standard-login': 'logs in with its own password',
  'open-access': 'needs no password: its files are public under /portal/home/<user>/',
  'self-service': "visitors register by e-mail; only its active subscribers' passwords open it",
};

export function PermissionsForm({ id, csrf, granted }: { id: string; csrf: string; granted: PortalOperation[] }) {
  return (
    <section aria-labelledby="permissions">
      <h2 id="permissions">Permissions</h2>
      {granted.length === 0 && (
        <p class="error">No permission: the user cannot log in to the portal until one is granted.</p>
      )}
      <form method="post" action={`${incomingPath(id)}/permissions`}>
        <Csrf token={csrf} />
        <fieldset>
          <legend>Operations the user may do in the portal</legend>
          <div class="checks">
            {PORTAL_OPERATIONS.map((op) => {
              const held = granted.includes(op);
              return (
                <label>
                  <input type="checkbox" name="operation" value={op} checked={held} /> <code>{op}</code>{' '}
                  <span class="muted">{OPERATION_HELP[op]}</span>
                </label>
              );
            })}
          </div>
        </fieldset>
        <button type="submit">Save permissions</button>
      </form>
    </section>
  );
}

/** A value typed into an option's field, shown again with the error that refused it. */
export interface RefusedOption {
  name: string;
  value: string;
  message: string;
}

export function OptionsTable(props: { id: string; csrf: string; options: OptionView[]; refused?: RefusedOption }) {
  const { id, csrf, options, refused } = props;
  return (
    <section aria-labelledby="options">
      <h2 id="options">Options</h2>
      <p>An option that is not set takes its default. A value is checked before it is stored.</p>
      <div class="table-wrap">
        <table class="options">
          <thead>
            <tr>
              <th scope="col">Option</th>
              <th scope="col">Expects</th>
              <th scope="col">Value</th>
            </tr>
          </thead>
          <tbody>
            {options.map((o, i) => {
              const mine = refused?.name === o.name ? refused : undefined;
              return (
                <tr id={`option-${i}`} class={mine ? 'refused' : ''}>
                  <th scope="row">
                    <code>{o.name}</code>
                  </th>
                  <td class="muted">{o.expects}</td>
                  <td>
                    <form class="option" method="post" action={`${incomingPath(id)}/options`}>
                      <Csrf token={csrf} />
                      <input type="hidden" name="name" value={o.name} />
                      {o.unknown ? (
                        <code>{o.value}</code>
                      ) : (
                        <>
                          <label for={`value-${i}`} class="visually-hidden">
                            Value of {o.name}
                          </label>
                          <input
                            id={`value-${i}`}
                            name="value"
                            type="text"
                            value={mine?.value ?? o.value ?? ''}
                            placeholder="default"
                            aria-invalid={mine ? 'true' : undefined}
                            aria-describedby={mine ? `option-error-${i}` : undefined}
                          />
                        </>
                      )}{' '}
                      {!o.unknown && (
                        <button type="submit" name="action" value="set" aria-label={`Set ${o.name}`}>
                          Set
                        </button>
                      )}{' '}
                      {o.value !== null && (
                        <button
                          type="submit"
                          name="action"
                          value="remove"
                          class="secondary"
                          aria-label={`Remove ${o.name}`}
                        >
                          Remove
                        </button>
                      )}
                      {mine && (
                        <p id={`option-error-${i}`} class="error-text">
                          {mine.message}
                        </p>
                      )}
                    </form>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}

const STATUS_TONE: Record<string, string> = {
  unverified: 'tone-idle',
  verified: 'tone-warn',
  active: 'tone-ok',
  revoked: 'tone-off',
};

export function SubscribersTable(props: { id: string; csrf: string; mode: string; subscribers: Subscriber[] }) {
  const { id, csrf, mode, subscribers } = props;
  const action = (s: Subscriber, verb: 'approve' | 'revoke', label: string, cls?: string) => (
    <form class="inline" method="post" action={`${incomingPath(id)}/subscribers/${s.id}/${verb}`}>
      <Csrf token={csrf} />
      <button type="submit" class={cls} aria-label={`${label} subscriber ${s.id} (${s.email})`}>
        {label}
      </button>
    </form>
  );
  return (
    <section aria-labelledby="subscribers">
      <h2 id="subscribers">Subscribers</h2>
      {mode !== 'self-service' && <p class="muted">Visitors register only to self-service users.</p>}
      {subscribers.length === 0 ? (
        <p>No subscriber.</p>
      ) : (
        <div class="table-wrap">
          <table class="monitor">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Name</th>
                <th scope="col">E-mail</th>
                <th scope="col">Country</th>
                <th scope="col">Status</th>
                <th scope="col">Registered</th>
                <th scope="col">Verified</th>
                <th scope="col">Activated</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {subscribers.map((s) => (
                <tr id={`subscriber-${s.id}`}>
                  <td>{s.id}</td>
                  <td>{s.name}</td>
                  <td>{s.email}</td>
                  <td>{s.iso}</td>
                  <td>
                    <span class={`status ${STATUS_TONE[s.status] ?? ''}`}>{s.status}</span>
                  </td>
                  <td>{when(s.createdAt)}</td>
                  <td>{when(s.verifiedAt)}</td>
                  <td>{when(s.activatedAt)}</td>
                  <td>
                    <div class="row-actions">
                      {s.status === 'verified' && action(s, 'approve', 'Approve')}
                      {s.status !== 'revoked' && action(s, 'revoke', 'Revoke', 'secondary')}
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {subscribers.some((s) => s.status === 'verified') && (
        <p class="muted">Approving a subscriber e-mails it a generated password.</p>
      )}
    </section>
  );
}
