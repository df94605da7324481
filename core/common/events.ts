/**
 * Event entries in the reference format `<KIND>;Key=Value;...`: PRS for product status
 * processing, ERR for dissemination failures, UPH for delivered files, INH for a portal download or
 * upload, DEA for a refused portal login, RET for a file retrieved into the store. Values are escaped so one
 * entry is one line.
 */
export type EventKind = 'PRS' | 'ERR' | 'UPH' | 'INH' | 'DEA' | 'RET';

const escapeValue = (v: unknown) =>
  (v === null || v === undefined ? '' : String(v))
    .replace(/\\/g, '\\\\')
    .replace(/;/g, '\\;')
    .replace(/\r/g, '\\r')
    .replace(/\n/g, '\\n');

export function formatEvent(kind: EventKind, fields: Record<string, unknown>): string {
  return [kind, ...Object.entries(fields).map(([k, v]) => `${k}=${escapeValue(v)}`)].join(';');
}

/** Leaves out the fields a line has no value for (the expiry's ERR line has no attempt to describe). */
const given = (fields: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));

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

/** What an attempt adds to its ERR line; absent for a transfer that failed without one (expiry). */
export interface AttemptFields {
  startTime?: Date;
  duration?: number;
  /** The host's login. */
  userId?: string;
  bytesSent?: number;
  /** The transfer method's module. */
  protocol?: string;
  /** The data mover. */
  mover?: string;
  hostAddress?: string;
}

/** What the ERR and UPH lines of a transfer both carry. */
interface TransferLine {
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
}

/** The fields both lines open with, in the reference's order. */
const lineStart = (e: TransferLine) => ({
  TimeStamp: ms(e.at),
  DataTransferId: e.transferId,
  DestinationName: e.destination,
  DestinationType: e.destinationType,
  FileName: e.fileName,
  FileSize: e.fileSize,
});

export const errEvent = (e: TransferLine & AttemptFields & { message: string }) =>
  formatEvent(
    'ERR',
    given({
      ...lineStart(e),
      ScheduledTime: ms(e.scheduledTime),
      StartTime: e.startTime && ms(e.startTime),
      Duration: e.duration,
      UserId: e.userId,
      BytesSent: e.bytesSent,
      TransferProtocol: e.protocol,
      TransferServer: e.mover,
      HostAddress: e.hostAddress,
      NetworkCode: e.networkCode,
      Message: e.message,
    }),
  );

/** A delivered file, with the reference's UPH fields this system knows. */
export const uphEvent = (
  e: TransferLine & {
    priority: number;
    queueTime: Date;
    startTime: Date;
    finishTime: Date;
    bytesSent: number;
    protocol: string;
    mover: string;
    hostAddress: string;
  },
) =>
  formatEvent('UPH', {
    ...lineStart(e),
    Identity: e.fileName,
    Priority: e.priority,
    QueueTime: ms(e.queueTime),
    ScheduledTime: ms(e.scheduledTime),
    StartTime: ms(e.startTime),
    Duration: e.finishTime.getTime() - e.startTime.getTime(),
    BytesSent: e.bytesSent,
    StatusCode: 'DONE',
    FinishTime: ms(e.finishTime),
    TransferProtocol: e.protocol,
    TransferServer: e.mover,
    NetworkCode: e.networkCode,
    HostAddress: e.hostAddress,
  });

/** A file a portal user downloaded or uploaded, with the reference's INH fields this system knows. */
export const inhEvent = (
  e: Omit<TransferLine, 'networkCode'> & {
    startTime: Date;
    userId: string;
    country: string;
    bytes: number;
    protocol: string;
    server: string;
    address: string;
    expiryTime: Date;
    action: 'download' | 'upload';
  },
) =>
  formatEvent('INH', {
    TimeStamp: ms(e.at),
    DataTransferId: e.transferId,
    DestinationName: e.destination,
    DestinationType: e.destinationType,
    FileName: e.fileName,
    FileSize: e.fileSize,
    ScheduledTime: ms(e.scheduledTime),
    StartTime: ms(e.startTime),
    Duration: e.at.getTime() - e.startTime.getTime(),
    UserId: e.userId,
    CountryCode: e.country,
    BytesSent: e.bytes,
    TransferProtocol: e.protocol,
    TransferServer: e.server,
    HostAddress: e.address,
    ExpiryTime: ms(e.expiryTime),
    Action: e.action,
  });

/** A refused portal login: the reason the client was not told, and where it came from. */
export const deaEvent = (e: { at: Date; userId: string; message: string; context: string }) =>
  formatEvent('DEA', { TimeStamp: ms(e.at), UserId: e.userId, Message: e.message, Context: e.context });

/** A transfer whose file was retrieved into the store, with the reference's RET fields this system knows. */
export const retEvent = (
  e: Omit<TransferLine, 'networkCode'> & {
    startTime: Date;
    finishTime: Date;
    mover: string;
    standby: boolean;
    source: { hostId: string; login: string; address: string; protocol: string } | null;
  },
) =>
  formatEvent(
    'RET',
    given({
      ...lineStart({ ...e, networkCode: null }),
      Identity: e.fileName,
      ScheduledTime: ms(e.scheduledTime),
      StartTime: ms(e.startTime),
      Duration: e.finishTime.getTime() - e.startTime.getTime(),
      HostId: e.source?.hostId,
      HostLogin: e.source?.login,
      HostAddress: e.source?.address,
      TransferProtocol: e.source?.protocol,
      MoverName: e.mover,
      StandBy: e.standby,
    }),
  );
