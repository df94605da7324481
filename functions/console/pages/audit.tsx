import type { Hono } from 'hono';
import { auditTrail } from '../../../core/console/audit.ts';
import { Page } from '../layout.tsx';
import type { ConsoleEnv } from '../session.ts';

export function auditPage(app: Hono<ConsoleEnv>) {
  app.get('/audit', async (c) => {
    const entries = await auditTrail(c.get('ports'));
    return c.html(
      <Page title="Audit trail" user={c.get('user')!.userId} csrf={c.get('user')!.csrf}>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">When (UTC)</th>
                <th scope="col">Who</th>
                <th scope="col">What</th>
                <th scope="col">Of</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr>
                  <td>{e.at.toISOString().slice(0, 19).replace('T', ' ')}</td>
                  <td>{e.actor}</td>
                  <td>{e.action}</td>
                  <td>
                    {e.targetKind} {e.target}
                  </td>
                  <td>{e.detail ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Page>,
    );
  });
}
