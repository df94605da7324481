import { z } from 'zod';

/**
 * Destination and host records with the reference server's key names (wire-decisions §7).
 * The kind of each key drives backup output, restore validation and storage alike.
 */
/** `int` is stored in 32 bits, `long` in 64 (within JavaScript's safe integers). */
export type FieldKind = 'text' | 'bool' | 'int' | 'long';

export const DESTINATION_KEYS = {
  name: 'text',
  ecuserName: 'text',
  countryIso: 'text',
  type: 'int',
  comment: 'text',
  active: 'bool',
  monitor: 'bool',
  backup: 'bool',
  acquisition: 'bool',
  stopIfDirty: 'bool',
  forceProxy: 'bool',
  onHostFailure: 'int',
  ifTargetExist: 'int',
  keepInSpool: 'int',
  maxConnections: 'int',
  retryCount: 'int',
  retryFrequency: 'int',
  maxStart: 'int',
  startFrequency: 'int',
  maxRequeue: 'int',
  maxPending: 'int',
  maxFileSize: 'long',
  resetFrequency: 'long',
  maxInactivity: 'long',
  transferRate: 'long',
  userMail: 'text',
  mailOnUpdate: 'bool',
  mailOnStart: 'bool',
  mailOnEnd: 'bool',
  mailOnError: 'bool',
  filterName: 'text',
  dateFormat: 'text',
  groupByDate: 'bool',
  update: 'long',
  transferGroupName: 'text',
  hostForSourceName: 'text',
  data: 'text',
} as const satisfies Record<string, FieldKind>;

export const HOST_KEYS = {
  hostid: 'long',
  ecuserName: 'text',
  transferMethodName: 'text',
  type: 'text',
  nickname: 'text',
  host: 'text',
  login: 'text',
  passwd: 'text',
  dir: 'text',
  data: 'text',
  comment: 'text',
  active: 'bool',
  maxConnections: 'int',
  retryCount: 'int',
  retryFrequency: 'int',
  check: 'bool',
  checkFrequency: 'long',
  checkFilename: 'text',
  mailOnSuccess: 'bool',
  mailOnError: 'bool',
  notifyOnce: 'bool',
  userMail: 'text',
  networkName: 'text',
  networkCode: 'text',
  filterName: 'text',
  transferGroupName: 'text',
  automaticLocation: 'bool',
  acquisitionFrequency: 'long',
} as const satisfies Record<string, FieldKind>;

type ValueOf<K extends FieldKind> = K extends 'text' ? string | null : K extends 'bool' ? boolean : number | null;
type RecordOf<T extends Record<string, FieldKind>> = { -readonly [P in keyof T]: ValueOf<T[P]> };

export type DestinationRecord = RecordOf<typeof DESTINATION_KEYS> & {
  name: string;
  countryIso: string;
  type: number;
  data: string;
};
/** `schedulerStatus`: what the movers are doing with a started destination (see shownStatusCode). */
export type Destination = DestinationRecord & { statusCode: string; schedulerStatus?: string | null };

/** A started destination (stored WAIT or EXEC) shows the scheduler's view; any other, what was stored. */
export const shownStatusCode = (d: Pick<Destination, 'statusCode' | 'schedulerStatus'>) =>
  (d.statusCode === 'WAIT' || d.statusCode === 'EXEC') && d.schedulerStatus ? d.schedulerStatus : d.statusCode;
/** A host as stored: the password sealed, never in clear. */
export type Host = Omit<RecordOf<typeof HOST_KEYS>, 'passwd'> & {
  hostid: number;
  data: string;
  passwdSealed: string | null;
};
/** What creating needs; every other key falls back to its stored default. */
export type HostInput = Partial<Omit<Host, 'hostid'>>;
export type DestinationInput = Partial<DestinationRecord> & Pick<DestinationRecord, 'name' | 'countryIso' | 'type'>;

export interface DestinationType {
  id: number;
  label: string;
  category: string;
  position: number;
}

export interface Ecuser {
  name: string;
  uid: number | null;
  gid: number | null;
  dir: string | null;
  shell: string | null;
  comment: string | null;
}
export interface EctransModule {
  name: string;
  classe: string | null;
  archive: string | null;
  active: boolean;
}
export interface TransferMethod {
  name: string;
  ectransModuleName: string | null;
  value: string | null;
  restrict: boolean;
  resolve: boolean;
  comment: string | null;
  active: boolean;
}

export interface DestinationFilter {
  iso?: string;
  /** Only destinations associated with this incoming user. */
  userId?: string;
  type?: number;
  name?: string;
}

/**
 * The record of destination/list and destination/{name} (wire-decisions §4): its one definition.
 * The database renders the same record for the list (migration 0007); a test holds the two equal.
 */
export const destinationRecord = z.strictObject({
  name: z.string(),
  type: z.int(),
  country: z.string(),
  countryIso: z.string(),
  active: z.boolean(),
  statusCode: z.string(),
  backup: z.boolean(),
  comment: z.string().nullable(),
  monitor: z.boolean(),
  acquisition: z.boolean(),
  userMail: z.string().nullable(),
  filterName: z.string().nullable(),
});

export const destinationView = (d: Destination): z.output<typeof destinationRecord> => ({
  name: d.name,
  type: d.type,
  country: d.countryIso,
  countryIso: d.countryIso,
  active: d.active,
  statusCode: shownStatusCode(d),
  backup: d.backup,
  comment: d.comment,
  monitor: d.monitor,
  acquisition: d.acquisition,
  userMail: d.userMail,
  filterName: d.filterName,
});
