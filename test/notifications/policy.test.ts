import { describe, expect, it } from 'vitest';
import { composeMail, isPermanent, type MailGroup } from '../../core/notifications/policy.ts';

const item = (id: number, over: Partial<MailGroup['items'][number]> = {}) => ({
  id,
  hostId: '7',
  transferId: 100 + id,
  target: `out/${id}.bin`,
  reason: 'connection refused',
  at: new Date(Date.UTC(2026, 0, 1, 0, 0, id)),
  ...over,
});

describe('a mail of the outbox', () => {
  it('names the destination, the host, the files, the reasons and the console page', () => {
    const mail = composeMail(
      { recipient: 'ops@example.org', destination: 'MO EXETER', kind: 'error', count: 1, items: [item(1)] },
      'https://data.example.org',
    );
    expect(mail.to).toBe('ops@example.org');
    expect(mail.subject).toBe('[ECPDS] MO EXETER: transfer failed (host 7)');
    expect(mail.text).toContain('Destination: MO EXETER\nHost: 7\n');
    expect(mail.text).toContain('Console: https://data.example.org/console/monitor/destinations/MO%20EXETER');
    expect(mail.text).toContain('file out/1.bin transfer 101: connection refused');
  });

  it('lists the first events of a digest and counts the rest, on one subject line', () => {
    const items = [1, 2, 3].map((i) => item(i, { hostId: String(i), reason: 'line\r\nbreak' }));
    const mail = composeMail(
      { recipient: 'ops@example.org', destination: 'D\nX', kind: 'error', count: 10_000, items },
      'https://h',
    );
    expect(mail.subject).toBe('[ECPDS] D X: transfer failed x10000');
    expect(mail.text).toContain('Host: 1, 2, 3');
    expect(mail.text).toContain('... and 9997 more');
    expect(mail.text).toContain('host 2 file out/2.bin transfer 102: line break');
  });

  it('tells a final refusal of the SMTP server from a passing one', () => {
    expect(isPermanent(Object.assign(new Error('no such user'), { responseCode: 550 }))).toBe(true);
    expect(isPermanent(Object.assign(new Error('try later'), { responseCode: 451 }))).toBe(false);
    expect(isPermanent(new Error('connect ECONNREFUSED'))).toBe(false);
  });
});
