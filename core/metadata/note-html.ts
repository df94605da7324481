import { escapeHtml, renderMarkdown } from './markdown.ts';
import type { MetadataField } from './model.ts';
import { STRUCTURED_KEYS } from './model.ts';

/** A field's value as shown in a note: Markdown rendered to the safe subset, everything else escaped. */
function valueHtml(field: MetadataField, value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map((v) => valueHtml(field, v)).join('');
  if (field.type === 'markdown' && typeof value === 'string') return renderMarkdown(value);
  if (STRUCTURED_KEYS[field.type] && typeof value === 'object') {
    const parts = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => typeof v === 'string' && v !== '')
      .map(([k, v]) => `${escapeHtml(k)}: ${escapeHtml(String(v))}`);
    return `<p>${parts.join('<br>')}</p>`;
  }
  return `<p>${escapeHtml(String(value)).replace(/\n/g, '<br>')}</p>`;
}

/**
 * The note of one destination: its includeInNotes fields, never password fields, one
 * `<h3>` per category, label and value per field (wire-decisions §6).
 */
export function buildNoteHtml(entries: Array<{ field: MetadataField; value: unknown }>): string {
  const byCategory = new Map<string, string[]>();
  for (const { field, value } of entries) {
    if (field.type === 'password') continue;
    const items = byCategory.get(field.category) ?? [];
    items.push(`<dt>${escapeHtml(field.label)}</dt><dd>${valueHtml(field, value)}</dd>`);
    byCategory.set(field.category, items);
  }
  return [...byCategory]
    .map(([category, items]) => `<h3>${escapeHtml(category)}</h3><dl>${items.join('')}</dl>`)
    .join('');
}
