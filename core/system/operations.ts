import { z } from 'zod';
import { op } from '../common/operation.ts';

export const systemOperations = {
  version: op({
    method: 'GET',
    path: '/v1/version',
    service: null,
    access: 'none',
    summary: 'Running release version',
    input: z.object({}),
    answer: z.strictObject({ version: z.string().describe('MAJOR.MINOR.PATCH-DDMMYYYY') }),
  }),
};
