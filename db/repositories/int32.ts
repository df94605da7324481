/**
 * Whether a number fits a 32-bit integer column. Parameters are checked only as integers
 * JavaScript holds exactly; one outside a column's range matches no row, rather than make the
 * database fail the query.
 */
export const isInt32 = (n: number) => Number.isInteger(n) && n >= -2_147_483_648 && n <= 2_147_483_647;
