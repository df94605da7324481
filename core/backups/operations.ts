import { z } from 'zod';
import { nullable, op } from '../common/operation.ts';
import { param } from '../common/params.ts';
import { DESTINATION_KEYS, type FieldKind, HOST_KEYS } from '../destinations/model.ts';
import { destinationFilters } from '../destinations/operations.ts';
import { backupSchema } from './schema.ts';

const kinds = { text: nullable.text, bool: z.boolean(), int: nullable.int, long: nullable.int };
const fromKeys = <T extends Record<string, FieldKind>>(keys: T) =>
  Object.fromEntries(Object.entries(keys).map(([k, kind]) => [k, kinds[kind]])) as {
    [K in keyof T]: (typeof kinds)[T[K]];
  };

const backupHost = z.strictObject({
  ...fromKeys(HOST_KEYS),
  hostid: z.int(),
  data: z.string().describe('options text; its secret options only with showSensitiveInfo'),
  passwd: z.string().nullable().optional().describe('only with showSensitiveInfo'),
});

/** A backup as the GET endpoints answer it (wire-decisions §7); a restore takes it back as it is. */
export const backupRecord = z.strictObject({
  destinations: z.array(
    z.strictObject({
      destination: z.strictObject({
        ...fromKeys(DESTINATION_KEYS),
        name: z.string(),
        countryIso: z.string(),
        type: z.int(),
        data: z.string(),
      }),
      associations: z.array(z.strictObject({ priority: z.int(), host: backupHost })),
    }),
  ),
  aliases: z.array(z.strictObject({ aliasFrom: z.string(), aliasTo: z.string() })),
  methods: z.array(
    z.strictObject({
      name: z.string(),
      ectransModuleName: kinds.text,
      value: kinds.text,
      restrict: z.boolean(),
      resolve: z.boolean(),
      comment: kinds.text,
      active: z.boolean(),
      ectransModule: z
        .strictObject({ name: z.string(), classe: kinds.text, archive: kinds.text, active: z.boolean() })
        .nullable(),
    }),
  ),
  ecusers: z.array(
    z.strictObject({
      name: z.string(),
      uid: kinds.int,
      gid: kinds.int,
      dir: kinds.text,
      shell: kinds.text,
      comment: kinds.text,
    }),
  ),
});

export const backupOperations = {
  backupList: op({
    method: 'GET',
    path: '/v1/destination/backup',
    service: 'destinationBackupList',
    summary: 'Backup of the selected destinations',
    input: z.object(destinationFilters),
    answer: z.strictObject({ backup: backupRecord }),
  }),
  backupGet: op({
    method: 'GET',
    path: '/v1/destination/backup/{name}',
    service: 'destinationBackupList',
    summary: 'Backup of one destination',
    input: z.object({ name: param.text() }),
    answer: z.strictObject({ backup: backupRecord }),
  }),
  backupPut: op({
    method: 'PUT',
    path: '/v1/destination/backup',
    service: 'putDestinationBackup',
    body: 'json',
    summary: 'Restore destinations from a backup',
    input: z.object({ copySharedHost: param.bool().optional(), body: z.unknown().optional() }),
    answer: z.strictObject({ message: z.string().describe('Number of Destination(s) created: <n>') }),
    documentedBody: z.object({ backup: backupSchema }),
  }),
};
