import { z } from 'zod';
import { noAnswer, op } from '../common/operation.ts';
import { ISO_CODE, param } from '../common/params.ts';
import { destinationRecord } from './model.ts';

/** The filters of destination/list, shared with the backup of selected destinations. */
export const destinationFilters = {
  iso: ISO_CODE.optional(),
  id: param.text().optional(),
  type: param.int().optional(),
};

export const destinationOperations = {
  destinationList: op({
    method: 'GET',
    path: '/v1/destination/list',
    service: 'destinationList',
    summary: 'List destinations',
    input: z.object(destinationFilters),
    answer: z.strictObject({ destinationList: z.array(destinationRecord) }),
  }),
  destinationGet: op({
    method: 'GET',
    path: '/v1/destination/{name}',
    service: null,
    summary: 'One destination',
    input: z.object({ name: param.text() }),
    answer: z.strictObject({ destination: destinationRecord }),
  }),
  destinationTypeList: op({
    method: 'GET',
    path: '/v1/destination/type/list',
    service: null,
    summary: 'Destination types',
    input: z.object({}),
    answer: z.strictObject({
      typeList: z.array(z.record(z.string(), z.string())).describe('one-key objects {"<id>": "<label>"}'),
    }),
  }),
  destinationCountryList: op({
    method: 'GET',
    path: '/v1/destination/country/list',
    service: 'destinationCountryList',
    summary: 'Countries with destinations',
    input: z.object({}),
    answer: z.strictObject({ countryList: z.array(z.strictObject({ iso: z.string(), name: z.string() })) }),
  }),
  destinationOption: op({
    method: 'POST',
    path: '/v1/destination/option',
    service: 'updateDestinationOption',
    body: 'form',
    formFields: ['value'],
    summary: 'Set one destination option (as POST /v1/host/option sets a host option)',
    input: z.object({ destination: param.text(), name: param.text(), value: param.text() }),
    answer: noAnswer,
  }),
};
