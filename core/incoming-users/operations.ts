import { z } from 'zod';
import { noAnswer, nullable, op } from '../common/operation.ts';
import { EMAIL, ISO_CODE, param } from '../common/params.ts';

export const PORTAL_SERVICES = ['standard-login', 'open-access', 'self-service'] as const;
export type PortalService = (typeof PORTAL_SERVICES)[number];

const INCOMING_ID_EXPECTED = "1 to 128 letters, digits, '_', '.' or '@' expected";
// The length as its own check, not in the pattern: the OpenAPI document shows it as maxLength.
const INCOMING_ID = param.matching(/^[A-Za-z0-9_.@]+$/, INCOMING_ID_EXPECTED).max(128, INCOMING_ID_EXPECTED);

const userFields = {
  id: INCOMING_ID,
  email: EMAIL,
  iso: ISO_CODE,
  portalService: param.oneOf(PORTAL_SERVICES).optional(),
  active: param.bool().optional(),
};

/** An incoming user as the list answers it. */
export const incomingUserRecord = z.strictObject({
  id: z.string(),
  email: z.string(),
  iso: z.string(),
  portalService: z.enum(PORTAL_SERVICES),
  active: z.boolean(),
  associations: z.array(z.string()),
  lastLoginDate: nullable.int,
  password: z.string().nullable().optional().describe('only with showSensitiveInfo'),
});

const idAndDestination = z.object({ id: param.text(), destination: param.text() });

export const incomingUserOperations = {
  incomingUserAdd: op({
    method: 'POST',
    path: '/v1/incoming/user/add',
    service: 'incomingUserAdd',
    summary: 'Create or update an incoming user with a password',
    input: z.object({ ...userFields, pass: param.text() }),
    answer: noAnswer,
  }),
  incomingUserAdd2: op({
    method: 'POST',
    path: '/v1/incoming/user/add2',
    service: 'incomingUserAdd2',
    summary: 'Create or update an incoming user without a password',
    input: z.object(userFields),
    answer: noAnswer,
  }),
  incomingUserList: op({
    method: 'GET',
    path: '/v1/incoming/user/list',
    service: 'incomingUserList',
    summary: 'List incoming users',
    input: z.object({ destination: param.text().optional() }),
    answer: z.strictObject({ userList: z.array(incomingUserRecord) }),
  }),
  incomingUserDel: op({
    method: 'DELETE',
    path: '/v1/incoming/user/del/{id}',
    service: 'incomingUserDel',
    summary: 'Deactivate (soft-delete) an incoming user',
    input: z.object({ id: param.text() }),
    answer: noAnswer,
  }),
  incomingCategoryAdd: op({
    method: 'POST',
    path: '/v1/incoming/category/add',
    service: 'incomingCategoryAdd',
    body: 'json',
    summary: 'Apply a category list (activation marker)',
    input: z.object({
      id: param.text(),
      body: z.array(z.string(), { error: 'JSON array of category names expected' }),
    }),
    answer: noAnswer,
  }),
  incomingAssociationAdd: op({
    method: 'POST',
    path: '/v1/incoming/association/add',
    service: 'incomingAssociationAdd',
    summary: 'Associate a user with a destination',
    input: idAndDestination,
    answer: noAnswer,
  }),
  incomingAssociationDel: op({
    method: 'DELETE',
    path: '/v1/incoming/association/del',
    service: 'incomingAssociationDel',
    summary: 'Remove an association',
    input: idAndDestination,
    answer: noAnswer,
  }),
  incomingAssociationList: op({
    method: 'GET',
    path: '/v1/incoming/association/list',
    service: 'incomingAssociationList',
    summary: 'List the destinations of a user',
    input: z.object({ id: param.text() }),
    answer: z.strictObject({ associationList: z.array(z.string()) }),
  }),
};
