import type { Ctx, Ports } from '../ports.ts';
import { currentValues } from './current-values.ts';
import { buildNoteHtml } from './note-html.ts';

/** The HTML note of a destination, from its flagged fields. */
export async function noteOf(ports: Ports, destination: string): Promise<string> {
  const fields = (await ports.repos.metadata.fields()).filter((f) => f.active && f.type !== 'password');
  const { metadata, includeInNotes } = await currentValues(ports, destination, fields);
  const entries = fields
    .filter((f) => includeInNotes[f.category]?.[f.name])
    .map((field) => ({ field, value: metadata[field.category]?.[field.name] }));
  return buildNoteHtml(entries);
}

/** Every destination's note (or one), for `ecpds-edge notes export`. */
export async function exportNotes(ports: Ports, destination?: string) {
  const names = destination ? [destination] : await ports.repos.destinations.names();
  return Promise.all(names.map(async (name) => ({ destination: name, note: await noteOf(ports, name) })));
}

/**
 * Pushes the destination's note after the response when a notes endpoint is configured.
 * A failure is retried once and logged; it never fails the API call.
 */
export function scheduleNotePush(ctx: Ctx, destination: string) {
  const publish = ctx.ports.notes;
  if (!publish) return;
  ctx.ports.waitUntil(
    (async () => {
      const html = await noteOf(ctx.ports, destination);
      for (let attempt = 1; attempt <= 2; attempt++) {
        try {
          await publish(destination, html);
          return;
        } catch (e) {
          ctx.ports.logger.warn('note push failed', {
            requestId: ctx.requestId,
            destination,
            attempt,
            reason: e instanceof Error ? e.message : String(e),
          });
        }
      }
    })(),
  );
}

/** `PUT <url>/<destination>` with `{"note": html}` and the token header when one is set. */
export function httpNotePublisher(url: string, token: string | null, fetchImpl: typeof fetch = fetch) {
  const base = url.replace(/\/+$/, '');
  return async (destination: string, html: string) => {
    const res = await fetchImpl(`${base}/${encodeURIComponent(destination)}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
      body: JSON.stringify({ note: html }),
      signal: AbortSignal.timeout(10_000),
    });
    if (!res.ok) throw new Error(`notes endpoint answered ${res.status}`);
  };
}
