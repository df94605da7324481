import type { Reply } from './harness.ts';

/** Every status the API may answer (wire-decisions §1, plus 429 for the failed-authentication limit). */
export const CONTRACT_STATUSES = new Set([200, 400, 401, 403, 404, 405, 412, 413, 429, 500, 503]);
/** Statuses whose body is one plain-text line. */
export const PLAIN_STATUSES = new Set([400, 401, 403, 404, 405, 412, 413, 429]);

// What a leaked exception or driver error looks like: stack frames, file positions, or SQL.
const LEAKS: Array<[string, RegExp]> = [
  ['stack frame', /(^|\n)\s*at\s+\S/],
  ['source position', /\.(?:[cm]?[jt]sx?):\d+:\d+/],
  ['module path', /node_modules|file:\/\//],
  ['error class', /\b(?:TypeError|ReferenceError|RangeError|SyntaxError|PostgresError|DrizzleError)\b/],
  ['failed query', /failed query|\bparams:/i],
  ['SQL', /\b(?:select\s+[\s\S]+?\s+from|insert\s+into|update\s+\S+\s+set|delete\s+from|returning\s+")/i],
  ['database error', /\brelation\s+"|\bcolumn\s+"|violates\s+\w+\s+constraint|syntax error at or near|duplicate key/i],
];

/**
 * The contract problems of one reply, empty when it is fine. `echoed` are values the request
 * sent, which a 400 may quote back: they are removed before looking for leaks.
 */
export function contractProblems(r: Reply, echoed: string[] = [], method = 'GET'): string[] {
  const problems: string[] = [];
  const type = r.headers.get('content-type') ?? '';
  if (!CONTRACT_STATUSES.has(r.status)) problems.push(`status ${r.status} is outside the contract`);
  if (!r.headers.get('x-request-id')) problems.push('no X-Request-Id');
  if (PLAIN_STATUSES.has(r.status)) {
    if (!type.startsWith('text/plain')) problems.push(`${r.status} with content-type ${type}`);
    if (/[\r\n]/.test(r.text)) problems.push(`${r.status} body is more than one line`);
    if (r.text.trim() === '' && method !== 'HEAD') problems.push(`${r.status} with an empty body`);
    if (r.status === 405 && !r.headers.get('allow')) problems.push('405 without Allow');
    if (r.status === 429 && !/^\d+$/.test(r.headers.get('retry-after') ?? '')) problems.push('429 without Retry-After');
  }
  if ((r.status === 500 || r.status === 503) && method !== 'HEAD') {
    const keys = r.json && typeof r.json === 'object' ? Object.keys(r.json).sort().join(',') : null;
    if (
      !type.startsWith('application/json') ||
      keys !== 'message,status' ||
      r.json.status !== 'error' ||
      typeof r.json.message !== 'string'
    ) {
      problems.push(`${r.status} body is not {"status":"error","message":string}: ${r.text.slice(0, 200)}`);
    }
    if (r.status === 503 && !String(r.json?.message).startsWith('Service unavailable: '))
      problems.push(`503 message: ${r.json?.message}`);
  }
  // A HEAD answer has no body to look at.
  if (r.status === 200 && method !== 'HEAD') {
    if (!type.startsWith('application/json') || !r.json || (r.json.status !== 'ok' && r.json.success !== 'yes')) {
      problems.push(`200 body is not a success envelope: ${r.text.slice(0, 200)}`);
    }
  }
  if (r.status !== 200) {
    let body = r.text;
    // Longest first, so a value that contains another is removed whole.
    for (const value of [...echoed].sort((a, b) => b.length - a.length)) {
      if (value.length < 3) continue;
      for (const form of [value, value.slice(0, 80), value.replace(/[\u0000-\u001f\u007f]/g, '?').slice(0, 80)])
        body = body.split(form).join('');
    }
    for (const [what, pattern] of LEAKS)
      if (pattern.test(body)) problems.push(`${what} in a ${r.status} body: ${r.text.slice(0, 300)}`);
  }
  return problems;
}
