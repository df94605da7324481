/**
 * Event entries in the reference format `<KIND>;Key=Value;...`: PRS for product status
 * processing, ERR for dissemination failures. Values are escaped so one entry is one line.
 */
export type EventKind = 'PRS' | 'ERR';

const escapeValue = (v: unknown) =>
  (v === null || v === undefined ? '' : String(v))
    .replace(/\\/g, '\\\\')
    .replace(/;/g, '\\;')
    .replace(/\r/g, '\\r')
    .replace(/\n/g, '\\n');

export function formatEvent(kind: EventKind, fields: Record<string, unknown>): string {
  return [kind, ...Object.entries(fields).map(([k, v]) => `${k}=${escapeValue(v)}`)].join(';');
}

const ms = (d: Date | null | undefined) => (d ? d.getTime() : null);

export const prsEvent = (e: {
  at: Date;
  code: string;
  product: string;
  step: number;
  productTime: Date;
  type: string;
  scheduledTime: Date | null;
  lastUpdate: Date | null;
  error: string;
}) =>
  formatEvent('PRS', {
    TimeStamp: ms(e.at),
    StatusCode: e.code,
    DataStream: e.product,
    TimeStep: e.step,
    TimeBase: ms(e.productTime),
    Type: e.type,
    ScheduleTime: ms(e.scheduledTime),
    LastUpdate: ms(e.lastUpdate),
    ErrorMessage: e.error,
  });

export const errEvent = (e: {
  at: Date;
  transferId: number;
  destination: string;
  /** A label, as the reference writes it: `Dissemination`, not 1. */
  destinationType: string;
  fileName: string;
  fileSize: number;
  scheduledTime: Date;
  /** The network's label (`Internet`, `RMDCN`), under the reference's field name. */
  networkCode: string | null;
  message: string;
}) =>
  formatEvent('ERR', {
    TimeStamp: ms(e.at),
    DataTransferId: e.transferId,
    DestinationName: e.destination,
    DestinationType: e.destinationType,
    FileName: e.fileName,
    FileSize: e.fileSize,
    ScheduledTime: ms(e.scheduledTime),
    NetworkCode: e.networkCode,
    Message: e.message,
  });
