import { z } from 'zod';
import type { OperationId } from './catalogue.ts';
import { backupSchema } from './backups/schema.ts';
import { DESTINATION_KEYS, HOST_KEYS, type FieldKind } from './destinations/model.ts';
import { FIELD_TYPES } from './metadata/model.ts';

/**
 * What each operation answers beside its envelope (wire-decisions §4), and the JSON bodies
 * the catalogue leaves as `unknown`. The OpenAPI document and the typed client both read
 * these; test/openapi.test.ts holds every real answer and handler type against them.
 */
const kinds = { text: z.string().nullable(), bool: z.boolean(), int: z.int().nullable(), long: z.int().nullable() };
const fromKeys = <T extends Record<string, FieldKind>>(keys: T) =>
  Object.fromEntries(Object.entries(keys).map(([k, kind]) => [k, kinds[kind]])) as { [K in keyof T]: (typeof kinds)[T[K]] };

const destinationRecord = z.strictObject({
  name: z.string(), type: z.int(), country: z.string(), countryIso: z.string(), active: z.boolean(), statusCode: z.string(),
  backup: z.boolean(), comment: kinds.text, monitor: z.boolean(), acquisition: z.boolean(), userMail: kinds.text, filterName: kinds.text,
});

const stepEntry = z.strictObject({
  product: z.string(), time: z.string(), buffer: z.int(), step: z.int(), type: z.string(), status: z.string(), statusCode: z.string(),
  statusLevel: z.int(), arrivalTime: kinds.int, scheduledTime: kinds.int, lastUpdate: kinds.int, productTime: kinds.int,
  minutesBeforeSchedule: kinds.int,
});

const incomingUser = z.strictObject({
  id: z.string(), email: z.string(), iso: z.string(), portalService: z.enum(['standard-login', 'open-access', 'self-service']),
  active: z.boolean(), associations: z.array(z.string()), lastLoginDate: kinds.int,
  password: z.string().nullable().optional().describe('only with showSensitiveInfo'),
});

const webUser = z.strictObject({
  id: z.string(), name: kinds.text, active: z.boolean(), categories: z.array(z.string()),
  password: z.string().optional().describe('only with showSensitiveInfo'),
});

const metadataField = z.strictObject({
  id: z.int(), name: z.string(), label: z.string(), type: z.enum(FIELD_TYPES), category: z.string(), tooltip: kinds.text,
  defaultValue: kinds.text, editable: z.boolean(), maxOccurs: z.int(), position: z.int(), active: z.boolean(),
});

const structured = z.record(z.string(), z.string().nullable());
const metadataValue = z.union([z.string(), structured, z.array(z.union([z.string(), structured])), z.null()]);
const grouped = <T extends z.ZodType>(value: T) => z.record(z.string(), z.record(z.string(), value));

const backupHost = z.strictObject({
  ...fromKeys(HOST_KEYS), hostid: z.int(), data: z.string(),
  passwd: z.string().nullable().optional().describe('only with showSensitiveInfo'),
});
const backup = z.strictObject({
  destinations: z.array(z.strictObject({
    destination: z.strictObject({ ...fromKeys(DESTINATION_KEYS), name: z.string(), countryIso: z.string(), type: z.int(), data: z.string() }),
    associations: z.array(z.strictObject({ priority: z.int(), host: backupHost })),
  })),
  aliases: z.array(z.strictObject({ aliasFrom: z.string(), aliasTo: z.string() })),
  methods: z.array(z.strictObject({
    name: z.string(), ectransModuleName: kinds.text, value: kinds.text, restrict: z.boolean(), resolve: z.boolean(), comment: kinds.text,
    active: z.boolean(), ectransModule: z.strictObject({ name: z.string(), classe: kinds.text, archive: kinds.text, active: z.boolean() }).nullable(),
  })),
  ecusers: z.array(z.strictObject({ name: z.string(), uid: kinds.int, gid: kinds.int, dir: kinds.text, shell: kinds.text, comment: kinds.text })),
});

/** Named shapes: the OpenAPI document lists them once under components.schemas. */
export const sharedShapes = { Destination: destinationRecord, StepEntry: stepEntry, IncomingUser: incomingUser, WebUser: webUser, MetadataField: metadataField, Backup: backup };

const none = z.strictObject({});
const stepList = z.strictObject({ stepStatusList: z.array(stepEntry) });
const destinationFilterAnswer = z.strictObject({ destinationList: z.array(destinationRecord) });

export const answers = {
  version: z.strictObject({ version: z.string().describe('MAJOR.MINOR.PATCH-DDMMYYYY') }),
  incomingUserAdd: none,
  incomingUserAdd2: none,
  incomingUserList: z.strictObject({ userList: z.array(incomingUser) }),
  incomingUserDel: none,
  incomingCategoryAdd: none,
  incomingAssociationAdd: none,
  incomingAssociationDel: none,
  incomingAssociationList: z.strictObject({ associationList: z.array(z.string()) }),
  webUserAdd: none,
  webUserAdd2: z.strictObject({ pass: z.string().describe('the generated password, shown this once') }),
  webUserList: z.strictObject({ userList: z.array(webUser) }),
  webUserDel: none,
  destinationList: destinationFilterAnswer,
  destinationGet: z.strictObject({ destination: destinationRecord }),
  destinationTypeList: z.strictObject({ typeList: z.array(z.record(z.string(), z.string())).describe('one-key objects {"<id>": "<label>"}') }),
  destinationCountryList: z.strictObject({ countryList: z.array(z.strictObject({ iso: z.string(), name: z.string() })) }),
  metadataFields: z.strictObject({ fields: z.array(metadataField) }),
  metadataGet: z.strictObject({
    destination: z.string(), exportedAt: z.string().describe('ISO 8601 UTC'),
    metadata: grouped(metadataValue), includeInNotes: grouped(z.boolean()),
  }),
  metadataPut: z.strictObject({ destination: z.string(), count: z.int().describe('number of values stored') }),
  backupList: z.strictObject({ backup }),
  backupGet: z.strictObject({ backup }),
  backupPut: z.strictObject({ message: z.string().describe('Number of Destination(s) created: <n>') }),
  hostOption: none,
  monitoringSummary: stepList,
  monitoringSummaryProduct: stepList,
  monitoringSummaryCycle: stepList,
  monitoringHistory: z.strictObject({ stepStatusHistoryList: z.array(stepEntry).describe('newest first') }),
  datafilePut: z.strictObject({ id: z.int().describe('data file id, for size and del') }),
  datafileSize: z.strictObject({ size: z.int().describe('bytes') }),
  datafileDel: none,
} as const satisfies Record<OperationId, z.ZodType>;

export type AnswerOf<K extends OperationId> = z.output<(typeof answers)[K]>;

/** The operations whose envelope is `success: yes` (the catalogue's types do not keep it; a test compares). */
export const SUCCESS_ENVELOPE = ['metadataFields', 'metadataGet', 'metadataPut'] as const satisfies readonly OperationId[];

/** The JSON bodies whose catalogue schema is `unknown` because their handlers check them. */
export const documentedBodies = {
  metadataPut: z.object({
    metadata: grouped(metadataValue).describe('values by category, then field name; null means no value'),
    includeInNotes: grouped(z.boolean().nullable()).optional().describe('fields to include in notes; omitted clears every flag'),
  }),
  backupPut: z.object({ backup: backupSchema }),
};

export type DocumentedBodyOf<K extends keyof typeof documentedBodies> = z.input<(typeof documentedBodies)[K]>;

/** The answer's envelope: `status: ok`, or `success: yes` for the metadata endpoints. */
export const envelopes = {
  status: z.strictObject({ status: z.literal('ok') }),
  success: z.strictObject({ success: z.literal('yes') }),
};

export const errorBody = z.strictObject({ status: z.literal('error'), message: z.string() });
