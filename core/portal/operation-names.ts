import { invalid } from '../common/errors.ts';
import { PORTAL_OPERATIONS, type PortalOperation } from './ports.ts';

/**
 * Operation names as typed (any case, repeated or not), in the catalogue's order, or why they are
 * refused. Light on purpose: the command line checks its arguments with it before it opens the database.
 */
export function portalOperations(names: readonly string[]): PortalOperation[] {
  const expected = `one of ${PORTAL_OPERATIONS.join(', ')} expected`;
  if (names.length === 0) throw invalid(`No portal operation given (${expected})`);
  const unknown = names.filter((n) => !(PORTAL_OPERATIONS as readonly string[]).includes(n.toLowerCase()));
  if (unknown.length > 0) {
    const list = unknown.map((n) => `'${n}'`).join(', ');
    throw invalid(`Unknown portal operation${unknown.length > 1 ? 's' : ''} ${list} (${expected})`);
  }
  return PORTAL_OPERATIONS.filter((op) => names.some((n) => n.toLowerCase() === op));
}
