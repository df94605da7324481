import { z } from 'zod';
import { nullable, op } from '../common/operation.ts';
import { param } from '../common/params.ts';

/** One step's status as every monitoring answer lists it. */
export const stepEntryRecord = z.strictObject({
  product: z.string(),
  time: z.string(),
  buffer: z.int(),
  step: z.int(),
  type: z.string(),
  status: z.string(),
  statusCode: z.string(),
  statusLevel: z.int(),
  arrivalTime: nullable.int,
  scheduledTime: nullable.int,
  lastUpdate: nullable.int,
  productTime: nullable.int,
  minutesBeforeSchedule: nullable.int,
});

const filters = {
  step: param.int().optional(),
  type: param.text().optional(),
  status: param.text().optional(),
};
const stepList = z.strictObject({ stepStatusList: z.array(stepEntryRecord) });

export const monitoringOperations = {
  monitoringSummary: op({
    method: 'GET',
    path: '/v1/monitoring/summary',
    service: 'monitoringSummaryList',
    summary: 'Step status of every product and cycle',
    input: z.object({ product: param.text().optional(), time: param.text().optional(), ...filters }),
    answer: stepList,
  }),
  monitoringSummaryProduct: op({
    method: 'GET',
    path: '/v1/monitoring/summary/{product}',
    service: 'monitoringSummaryList',
    summary: 'Every cycle of one product',
    input: z.object({ product: param.text(), time: param.text().optional(), ...filters }),
    answer: stepList,
  }),
  monitoringSummaryCycle: op({
    method: 'GET',
    path: '/v1/monitoring/summary/{product}/{time}',
    service: 'monitoringSummaryList',
    summary: 'One product and reference time',
    input: z.object({ product: param.text(), time: param.text(), ...filters }),
    answer: stepList,
  }),
  monitoringHistory: op({
    method: 'GET',
    path: '/v1/monitoring/summary/{product}/{time}/{step}/{type}',
    service: 'monitoringSummaryList',
    summary: 'History of one product step',
    input: z.object({
      product: param.text(),
      time: param.text(),
      step: param.int(),
      type: param.text(),
      status: param.text().optional(),
    }),
    answer: z.strictObject({ stepStatusHistoryList: z.array(stepEntryRecord).describe('newest first') }),
  }),
};
