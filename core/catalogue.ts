import type { z } from 'zod';
import { backupOperations, backupRecord } from './backups/operations.ts';
import type { Operation } from './common/operation.ts';

export type { Operation };

import { dataFileOperations } from './data-files/operations.ts';
import { destinationRecord } from './destinations/model.ts';
import { destinationOperations } from './destinations/operations.ts';
import { hostOperations } from './hosts/operations.ts';
import { incomingUserOperations, incomingUserRecord } from './incoming-users/operations.ts';
import { metadataFieldRecord, metadataOperations } from './metadata/operations.ts';
import { monitoringOperations, stepEntryRecord } from './monitoring/operations.ts';
import { systemOperations } from './system/operations.ts';
import { webUserOperations, webUserRecord } from './web-users/operations.ts';

/**
 * The service catalogue: every operation of the API once, assembled from the features. Routing,
 * permission checks, the console's permission checkboxes, the OpenAPI document and the typed
 * client all read it. A new operation goes into its feature's operations.ts and handlers.ts.
 */
export const catalogue = {
  ...systemOperations,
  ...incomingUserOperations,
  ...webUserOperations,
  ...destinationOperations,
  ...metadataOperations,
  ...backupOperations,
  ...hostOperations,
  ...monitoringOperations,
  ...dataFileOperations,
} satisfies Record<string, Operation>;

export type OperationId = keyof typeof catalogue;
export type InputOf<K extends OperationId> = z.output<(typeof catalogue)[K]['input']>;
export type AnswerOf<K extends OperationId> = z.output<(typeof catalogue)[K]['answer']>;
type WithDocumentedBody = {
  [K in OperationId]: (typeof catalogue)[K] extends { documentedBody: z.ZodType } ? K : never;
};
export type DocumentedBodyId = WithDocumentedBody[OperationId];
export type DocumentedBodyOf<K extends DocumentedBodyId> = z.input<(typeof catalogue)[K]['documentedBody']>;
type SuccessEnvelope = { [K in OperationId]: (typeof catalogue)[K] extends { envelope: 'success' } ? K : never };
/** The operations whose envelope is `success: yes`. */
export type SuccessEnvelopeId = SuccessEnvelope[OperationId];

/** Record shapes the answers share: the OpenAPI document lists them once under components.schemas. */
export const namedShapes = {
  Destination: destinationRecord,
  StepEntry: stepEntryRecord,
  IncomingUser: incomingUserRecord,
  WebUser: webUserRecord,
  MetadataField: metadataFieldRecord,
  Backup: backupRecord,
};

export const SHOW_SENSITIVE_INFO = 'showSensitiveInfo';

/** Every permission name a client can be granted, in catalogue order. */
export const SERVICE_NAMES: readonly string[] = [
  ...new Set(Object.values(catalogue).flatMap((o: Operation) => (o.service ? [o.service] : []))),
  SHOW_SENSITIVE_INFO,
];
