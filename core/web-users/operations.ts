import { z } from 'zod';
import { noAnswer, nullable, op } from '../common/operation.ts';
import { param } from '../common/params.ts';

const WEB_ID_EXPECTED = "1 to 32 letters, digits, '_', '.' or '-' expected";
// The length as its own check, not in the pattern: the OpenAPI document shows it as maxLength.
const WEB_ID = param.matching(/^[A-Za-z0-9_.-]+$/, WEB_ID_EXPECTED).max(32, WEB_ID_EXPECTED);

/** A web user as the list answers it. */
export const webUserRecord = z.strictObject({
  id: z.string(),
  name: nullable.text,
  active: z.boolean(),
  categories: z.array(z.string()),
  password: z.string().optional().describe('only with showSensitiveInfo'),
});

export const webUserOperations = {
  webUserAdd: op({
    method: 'POST',
    path: '/v1/web/user/add',
    service: 'webUserAdd',
    summary: 'Create or update a web user',
    input: z.object({
      id: WEB_ID,
      pass: param.text().optional(),
      name: param.text().optional(),
      active: param.bool().optional(),
    }),
    answer: noAnswer,
  }),
  webUserAdd2: op({
    method: 'POST',
    path: '/v1/web/user/add2',
    service: 'webUserAdd2',
    summary: 'Create a web user with a generated password',
    input: z.object({ id: WEB_ID, name: param.text().optional(), active: param.bool().optional() }),
    answer: z.strictObject({ pass: z.string().describe('the generated password, shown this once') }),
  }),
  webUserList: op({
    method: 'GET',
    path: '/v1/web/user/list',
    service: 'webUserList',
    summary: 'List active web users',
    input: z.object({ category: param.text().optional() }),
    answer: z.strictObject({ userList: z.array(webUserRecord) }),
  }),
  webUserDel: op({
    method: 'DELETE',
    path: '/v1/web/user/del/{id}',
    service: 'webUserDel',
    summary: 'Delete a web user',
    input: z.object({ id: param.text() }),
    answer: noAnswer,
  }),
};
