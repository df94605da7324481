import { z } from 'zod';
import { nullable, op } from '../common/operation.ts';
import { param } from '../common/params.ts';
import { FIELD_TYPES } from './model.ts';

/** A field definition as the API answers it. */
export const metadataFieldRecord = z.strictObject({
  id: z.int(),
  name: z.string(),
  label: z.string(),
  type: z.enum(FIELD_TYPES),
  category: z.string(),
  tooltip: nullable.text,
  defaultValue: nullable.text,
  editable: z.boolean(),
  maxOccurs: z.int(),
  position: z.int(),
  active: z.boolean(),
});

const structured = z.record(z.string(), z.string().nullable());
const metadataValue = z.union([z.string(), structured, z.array(z.union([z.string(), structured])), z.null()]);
const grouped = <T extends z.ZodType>(value: T) => z.record(z.string(), z.record(z.string(), value));

export const metadataOperations = {
  metadataFields: op({
    method: 'GET',
    path: '/v1/destination/metadata/fields',
    service: 'getDestinationMetaFields',
    envelope: 'success',
    summary: 'Active metadata field definitions',
    input: z.object({}),
    answer: z.strictObject({ fields: z.array(metadataFieldRecord) }),
  }),
  metadataGet: op({
    method: 'GET',
    path: '/v1/destination/{name}/metadata',
    service: 'getDestinationMetaValuesByDestination',
    envelope: 'success',
    summary: 'Metadata values of a destination',
    input: z.object({ name: param.text() }),
    answer: z.strictObject({
      destination: z.string(),
      exportedAt: z.string().describe('ISO 8601 UTC'),
      metadata: grouped(metadataValue),
      includeInNotes: grouped(z.boolean()),
    }),
  }),
  metadataPut: op({
    method: 'PUT',
    path: '/v1/destination/{name}/metadata',
    service: 'setDestinationMetaValues',
    envelope: 'success',
    body: 'json',
    summary: 'Replace the metadata values of a destination',
    input: z.object({ name: param.text(), body: z.unknown().optional() }),
    answer: z.strictObject({ destination: z.string(), count: z.int().describe('number of values stored') }),
    documentedBody: z.object({
      metadata: grouped(metadataValue).describe('values by category, then field name; null means no value'),
      includeInNotes: grouped(z.boolean().nullable())
        .optional()
        .describe('fields to include in notes; omitted clears every flag'),
    }),
  }),
};
