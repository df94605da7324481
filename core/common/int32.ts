import { z } from 'zod';

// The range of the 32-bit integer columns (Postgres `integer`).
const MIN = -2_147_483_648;
const MAX = 2_147_483_647;

/** A number a 32-bit integer column can hold. */
export const isInt32 = (n: number) => Number.isInteger(n) && n >= MIN && n <= MAX;

/** The schema of a value stored in a 32-bit integer column. */
export const int32 = () => z.number().int().min(MIN).max(MAX);
