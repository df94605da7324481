import { z } from 'zod';
import { DURATION_EXPECTED, parseDuration, parseStart, START_EXPECTED } from './data-files/schedule.ts';
import { EMAIL, ISO_CODE, param, type InputSchema } from './common/params.ts';

/**
 * The service catalogue: every operation of the API once. Routing, permission checks,
 * the console's permission checkboxes and the API documentation all read it.
 */
export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
/** none: no authentication; basic: valid credentials only; service: credentials + permission. */
export type Access = 'none' | 'basic' | 'service';

export interface Operation<S extends InputSchema = InputSchema> {
  method: Method;
  path: string;
  service: string | null;
  access: Access;
  /** The three destination-metadata endpoints answer `success: yes` instead of `status: ok`. */
  envelope: 'status' | 'success';
  /** Where the body comes from: a JSON document (field `body`) or form fields merged into the input. */
  body?: 'json' | 'form';
  summary: string;
  input: S;
}

const op = <S extends InputSchema>(o: Omit<Operation<S>, 'envelope' | 'access'> & Partial<Pick<Operation<S>, 'envelope' | 'access'>>): Operation<S> => ({
  envelope: 'status',
  access: o.service ? 'service' : 'basic',
  ...o,
});

const PORTAL_SERVICES = ['standard-login', 'open-access', 'self-service'] as const;
export type PortalService = (typeof PORTAL_SERVICES)[number];

const INCOMING_ID = param.matching(/^[A-Za-z0-9_.@]{1,128}$/, "1 to 128 letters, digits, '_', '.' or '@' expected");
const WEB_ID = param.matching(/^[A-Za-z0-9_.-]{1,32}$/, "1 to 32 letters, digits, '_', '.' or '-' expected");
const text = param.text;
const optional = <T extends z.ZodType>(t: T) => t.optional();

const incomingUserFields = {
  id: INCOMING_ID,
  email: EMAIL,
  iso: ISO_CODE,
  portalService: optional(param.oneOf(PORTAL_SERVICES)),
  active: optional(param.bool()),
};
const destinationFilters = { iso: optional(ISO_CODE), id: optional(text()), type: optional(param.int()) };
const monitoringFilters = { step: optional(param.int()), type: optional(text()), status: optional(text()) };
const anyJson = z.unknown().optional();
const PRIORITY = param.int().refine((n) => n >= 0 && n <= 99, 'integer from 0 to 99 expected');
const LIFETIME = text().refine((t) => parseDuration(t) !== null, DURATION_EXPECTED);
// Relative starts are resolved later against the clock; any instant works to check the form.
const START = text().refine((t) => parseStart(t, new Date(0)) !== null, START_EXPECTED);

export const catalogue = {
  version: op({ method: 'GET', path: '/v1/version', service: null, access: 'none', summary: 'Running release version', input: z.object({}) }),

  incomingUserAdd: op({ method: 'POST', path: '/v1/incoming/user/add', service: 'incomingUserAdd', summary: 'Create or update an incoming user with a password', input: z.object({ ...incomingUserFields, pass: text() }) }),
  incomingUserAdd2: op({ method: 'POST', path: '/v1/incoming/user/add2', service: 'incomingUserAdd2', summary: 'Create or update an incoming user without a password', input: z.object(incomingUserFields) }),
  incomingUserList: op({ method: 'GET', path: '/v1/incoming/user/list', service: 'incomingUserList', summary: 'List incoming users', input: z.object({ destination: optional(text()) }) }),
  incomingUserDel: op({ method: 'DELETE', path: '/v1/incoming/user/del/{id}', service: 'incomingUserDel', summary: 'Deactivate (soft-delete) an incoming user', input: z.object({ id: text() }) }),
  incomingCategoryAdd: op({ method: 'POST', path: '/v1/incoming/category/add', service: 'incomingCategoryAdd', body: 'json', summary: 'Apply a category list (activation marker)', input: z.object({ id: text(), body: z.array(z.string(), { error: 'JSON array of category names expected' }) }) }),
  incomingAssociationAdd: op({ method: 'POST', path: '/v1/incoming/association/add', service: 'incomingAssociationAdd', summary: 'Associate a user with a destination', input: z.object({ id: text(), destination: text() }) }),
  incomingAssociationDel: op({ method: 'DELETE', path: '/v1/incoming/association/del', service: 'incomingAssociationDel', summary: 'Remove an association', input: z.object({ id: text(), destination: text() }) }),
  incomingAssociationList: op({ method: 'GET', path: '/v1/incoming/association/list', service: 'incomingAssociationList', summary: 'List the destinations of a user', input: z.object({ id: text() }) }),

  webUserAdd: op({ method: 'POST', path: '/v1/web/user/add', service: 'webUserAdd', summary: 'Create or update a web user', input: z.object({ id: WEB_ID, pass: optional(text()), name: optional(text()), active: optional(param.bool()) }) }),
  webUserAdd2: op({ method: 'POST', path: '/v1/web/user/add2', service: 'webUserAdd2', summary: 'Create a web user with a generated password', input: z.object({ id: WEB_ID, name: optional(text()), active: optional(param.bool()) }) }),
  webUserList: op({ method: 'GET', path: '/v1/web/user/list', service: 'webUserList', summary: 'List active web users', input: z.object({ category: optional(text()) }) }),
  webUserDel: op({ method: 'DELETE', path: '/v1/web/user/del/{id}', service: 'webUserDel', summary: 'Delete a web user', input: z.object({ id: text() }) }),

  destinationList: op({ method: 'GET', path: '/v1/destination/list', service: 'destinationList', summary: 'List destinations', input: z.object(destinationFilters) }),
  destinationGet: op({ method: 'GET', path: '/v1/destination/{name}', service: null, summary: 'One destination', input: z.object({ name: text() }) }),
  destinationTypeList: op({ method: 'GET', path: '/v1/destination/type/list', service: null, summary: 'Destination types', input: z.object({}) }),
  destinationCountryList: op({ method: 'GET', path: '/v1/destination/country/list', service: 'destinationCountryList', summary: 'Countries with destinations', input: z.object({}) }),

  metadataFields: op({ method: 'GET', path: '/v1/destination/metadata/fields', service: 'getDestinationMetaFields', envelope: 'success', summary: 'Active metadata field definitions', input: z.object({}) }),
  metadataGet: op({ method: 'GET', path: '/v1/destination/{name}/metadata', service: 'getDestinationMetaValuesByDestination', envelope: 'success', summary: 'Metadata values of a destination', input: z.object({ name: text() }) }),
  metadataPut: op({ method: 'PUT', path: '/v1/destination/{name}/metadata', service: 'setDestinationMetaValues', envelope: 'success', body: 'json', summary: 'Replace the metadata values of a destination', input: z.object({ name: text(), body: anyJson }) }),

  backupList: op({ method: 'GET', path: '/v1/destination/backup', service: 'destinationBackupList', summary: 'Backup of the selected destinations', input: z.object(destinationFilters) }),
  backupGet: op({ method: 'GET', path: '/v1/destination/backup/{name}', service: 'destinationBackupList', summary: 'Backup of one destination', input: z.object({ name: text() }) }),
  backupPut: op({ method: 'PUT', path: '/v1/destination/backup', service: 'putDestinationBackup', body: 'json', summary: 'Restore destinations from a backup', input: z.object({ copySharedHost: optional(param.bool()), body: anyJson }) }),

  hostOption: op({ method: 'POST', path: '/v1/host/option', service: 'updateHostOption', body: 'form', summary: 'Set one host option', input: z.object({ hostid: param.int(), name: text(), value: text() }) }),

  monitoringSummary: op({ method: 'GET', path: '/v1/monitoring/summary', service: 'monitoringSummaryList', summary: 'Step status of every product and cycle', input: z.object({ product: optional(text()), time: optional(text()), ...monitoringFilters }) }),
  monitoringSummaryProduct: op({ method: 'GET', path: '/v1/monitoring/summary/{product}', service: 'monitoringSummaryList', summary: 'Every cycle of one product', input: z.object({ product: text(), time: optional(text()), ...monitoringFilters }) }),
  monitoringSummaryCycle: op({ method: 'GET', path: '/v1/monitoring/summary/{product}/{time}', service: 'monitoringSummaryList', summary: 'One product and reference time', input: z.object({ product: text(), time: text(), ...monitoringFilters }) }),
  monitoringHistory: op({ method: 'GET', path: '/v1/monitoring/summary/{product}/{time}/{step}/{type}', service: 'monitoringSummaryList', summary: 'History of one product step', input: z.object({ product: text(), time: text(), step: param.int(), type: text(), status: optional(text()) }) }),

  datafilePut: op({ method: 'GET', path: '/v1/datafile/put', service: 'datafilePut', summary: 'Register a data file for dissemination', input: z.object({ destination: text(), source: text(), uniquename: optional(text()), target: optional(text()), metadata: optional(text()), priority: optional(PRIORITY), lifetime: optional(LIFETIME), at: optional(START), standby: optional(param.bool()), force: optional(param.bool()) }) }),
  datafileSize: op({ method: 'GET', path: '/v1/datafile/size', service: 'datafileSize', summary: 'Size of a data file in bytes', input: z.object({ id: param.int() }) }),
  datafileDel: op({ method: 'DELETE', path: '/v1/datafile/del', service: 'datafileDel', summary: 'Delete a data file', input: z.object({ id: param.int() }) }),
} as const satisfies Record<string, Operation>;

export type OperationId = keyof typeof catalogue;
export type InputOf<K extends OperationId> = z.output<(typeof catalogue)[K]['input']>;

export const SHOW_SENSITIVE_INFO = 'showSensitiveInfo';

/** Every permission name a client can be granted, in catalogue order. */
export const SERVICE_NAMES: readonly string[] = [
  ...new Set(Object.values(catalogue).flatMap((o) => (o.service ? [o.service] : []))),
  SHOW_SENSITIVE_INFO,
];
