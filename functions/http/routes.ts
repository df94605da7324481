import { catalogue, type Operation, type OperationId } from '../../core/catalogue.ts';

/** `/v1/destination/{name}` → `/v1/destination/:name` */
export const honoPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

const isParam = (segment: string) => segment.startsWith('{');

/** Literal segments win over parameters (wire-decisions §11 routing note). */
function specificity(a: string, b: string): number {
  const sa = a.split('/');
  const sb = b.split('/');
  for (let i = 0; i < Math.min(sa.length, sb.length); i++) {
    const pa = isParam(sa[i]!);
    const pb = isParam(sb[i]!);
    if (pa !== pb) return pa ? 1 : -1;
  }
  return 0;
}

export function routesInMatchOrder(): Array<[OperationId, Operation]> {
  return (Object.entries(catalogue) as Array<[OperationId, Operation]>).sort(([, a], [, b]) =>
    specificity(a.path, b.path),
  );
}
