/** The mail outbox's part of /metrics: rows not sent yet and the age of the oldest (the alerts read both). */
export function renderMailOutbox(pending: { count: number; oldestSeconds: number }): string {
  return `${[
    '# HELP ecpds_mail_outbox_pending Mails of destinations and hosts not sent yet (outbox rows).',
    '# TYPE ecpds_mail_outbox_pending gauge',
    `ecpds_mail_outbox_pending ${pending.count}`,
    '# HELP ecpds_mail_outbox_oldest_seconds Age of the oldest mail not sent yet, in seconds (0 when none).',
    '# TYPE ecpds_mail_outbox_oldest_seconds gauge',
    `ecpds_mail_outbox_oldest_seconds ${Math.round(pending.oldestSeconds)}`,
  ].join('\n')}\n`;
}
