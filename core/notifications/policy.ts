/**
 * What a mail tells, and the option that asks for it (core/destinations/model.ts): `start`, `end` and `error`
 * (mailOnStart, mailOnEnd, mailOnError: a transfer started, ended, failed), `hold` (mailOnError: every host
 * failed and the destination went on HOLD), `update` (mailOnUpdate: an operator changed the destination), and
 * the host's `host-error` and `host-success` (its mailOnError and mailOnSuccess: a send to it or its check failed,
 * then one worked again).
 *
 * The rows are written by the statements that write the events (db/repositories/mail-outbox.ts has their
 * conditions): a destination or host without the option costs a condition, not a row. A `notifyOnce` host is
 * mailed at the first failure of an episode only; the episode ends with its next success, which is the
 * `host-success` mail (sent only then: a host that never failed is not said to work again).
 */
export type MailKind = 'start' | 'end' | 'error' | 'hold' | 'update' | 'host-error' | 'host-success';

export const MAIL_KINDS: readonly MailKind[] = [
  'start',
  'end',
  'error',
  'hold',
  'update',
  'host-error',
  'host-success',
];

/** One event of a digest. */
export interface MailItem {
  id: number;
  hostId: string | null;
  transferId: number | null;
  target: string | null;
  reason: string | null;
  at: Date;
}

/**
 * The rows of one recipient, destination and kind taken together: they go as one mail listing the first
 * `items` (the oldest) and saying how many more there were, so that a burst of failures is one digest.
 */
export interface MailGroup {
  recipient: string;
  destination: string;
  kind: MailKind;
  /** Rows in the group, listed or not. */
  count: number;
  items: MailItem[];
}

const TITLES: Record<MailKind, string> = {
  start: 'transfer started',
  end: 'transfer done',
  error: 'transfer failed',
  hold: 'destination on HOLD: every host failed',
  update: 'destination changed',
  'host-error': 'host failed',
  'host-success': 'host works again',
};

/** The console's page of a destination. */
export const consoleLink = (origin: string, destination: string) =>
  `${origin}/console/monitor/destinations/${encodeURIComponent(destination)}`;

// A subject is one line: a line break from a name would be refused by the mailer.
const oneLine = (s: string) => s.replace(/[\r\n\t]+/g, ' ');

/** The mail of a group: the destination, the hosts, the files and the reasons, and the console's page. */
export function composeMail(group: MailGroup, consoleOrigin: string): { to: string; subject: string; text: string } {
  const hosts = [...new Set(group.items.map((i) => i.hostId).filter((h): h is string => h !== null))];
  const title = TITLES[group.kind];
  const hostPart = hosts.length === 1 ? ` (host ${hosts[0]})` : '';
  const countPart = group.count > 1 ? ` x${group.count}` : '';
  const subject = oneLine(`[ECPDS] ${group.destination}: ${title}${hostPart}${countPart}`);
  const lines = [
    `Destination: ${group.destination}`,
    ...(hosts.length > 0 ? [`Host: ${hosts.join(', ')}`] : []),
    `Event: ${title}${group.count > 1 ? ` (${group.count} times)` : ''}`,
    `Console: ${consoleLink(consoleOrigin, group.destination)}`,
    '',
  ];
  for (const item of group.items) {
    const parts = [item.at.toISOString()];
    if (item.hostId !== null && hosts.length > 1) parts.push(`host ${item.hostId}`);
    if (item.target !== null) parts.push(`file ${item.target}`);
    if (item.transferId !== null) parts.push(`transfer ${item.transferId}`);
    lines.push(`- ${parts.join(' ')}${item.reason ? `: ${oneLine(item.reason)}` : ''}`);
  }
  const more = group.count - group.items.length;
  if (more > 0) lines.push(`... and ${more} more`);
  return { to: group.recipient, subject, text: `${lines.join('\n')}\n` };
}

/** One plain address, as the mailer takes it: other recipients are given up rather than retried for ever. */
export const isPlainAddress = (to: string) => /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+$/.test(to);

/** Whether an SMTP failure is the server's final word on this mail (5xx): retrying it would fail the same way. */
export function isPermanent(error: unknown): boolean {
  const code = (error as { responseCode?: unknown } | null)?.responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
}
