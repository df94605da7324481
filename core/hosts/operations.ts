import { z } from 'zod';
import { noAnswer, op } from '../common/operation.ts';
import { param } from '../common/params.ts';

export const hostOperations = {
  hostOption: op({
    method: 'POST',
    path: '/v1/host/option',
    service: 'updateHostOption',
    body: 'form',
    formFields: ['value'],
    summary: 'Set one host option',
    input: z.object({ hostid: param.int(), name: param.text(), value: param.text() }),
    answer: noAnswer,
  }),
};
