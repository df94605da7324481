import { z } from 'zod';
import { noAnswer, op } from '../common/operation.ts';
import { param } from '../common/params.ts';
import { DURATION_EXPECTED, parseDuration, parseStart, START_EXPECTED } from './schedule.ts';

const PRIORITY = param.int({ min: 0, max: 99 });
const LIFETIME = param.text().refine((t) => parseDuration(t) !== null, DURATION_EXPECTED);
// Relative starts are resolved later against the clock; any instant works to check the form.
const START = param.text().refine((t) => parseStart(t, new Date(0)) !== null, START_EXPECTED);

export const dataFileOperations = {
  datafilePut: op({
    method: 'GET',
    path: '/v1/datafile/put',
    service: 'datafilePut',
    summary: 'Register a data file for dissemination',
    input: z.object({
      destination: param.text(),
      source: param.text(),
      uniquename: param.text().optional(),
      target: param.text().optional(),
      metadata: param.text().optional(),
      priority: PRIORITY.optional(),
      lifetime: LIFETIME.optional(),
      at: START.optional(),
      standby: param.bool().optional(),
      force: param.bool().optional(),
    }),
    answer: z.strictObject({ id: z.int().describe('data file id, for size and del') }),
  }),
  datafileSize: op({
    method: 'GET',
    path: '/v1/datafile/size',
    service: 'datafileSize',
    summary: 'Size of a data file in bytes',
    input: z.object({ id: param.int() }),
    answer: z.strictObject({ size: z.int().describe('bytes') }),
  }),
  datafileDel: op({
    method: 'DELETE',
    path: '/v1/datafile/del',
    service: 'datafileDel',
    summary: 'Delete a data file',
    input: z.object({ id: param.int() }),
    answer: noAnswer,
  }),
};
