import type { SecretBox } from '../common/crypto.ts';
import { invalid } from '../common/errors.ts';
import { isMultiValue, type MetadataField, STRUCTURED_KEYS } from './model.ts';

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function isUrl(text: string): boolean {
  if (/\s/.test(text) || !/^[a-z][a-z0-9+.-]*:/i.test(text)) return false;
  try {
    new URL(text);
    return true;
  } catch {
    return false;
  }
}

/** One submitted item in its stored text form, or null when it counts as no value. */
function normalizeItem(field: MetadataField, item: unknown): string | null {
  if (item === null || item === undefined) return null;
  const keys = STRUCTURED_KEYS[field.type];
  if (keys) {
    if (!isPlainObject(item))
      throw invalid(`Metadata field ${field.name}: an object with keys ${keys.join(', ')} expected`);
    const out: Record<string, string | null> = {};
    for (const key of Object.keys(item)) {
      if (!keys.includes(key))
        throw invalid(`Metadata field ${field.name}: unexpected key '${key}' (allowed: ${keys.join(', ')})`);
    }
    for (const key of keys) {
      const v = item[key];
      if (v !== null && v !== undefined && typeof v !== 'string')
        throw invalid(`Metadata field ${field.name}: '${key}' must be a string or null`);
      const trimmed = typeof v === 'string' ? v.trim() : '';
      out[key] = trimmed === '' ? null : trimmed;
    }
    return Object.values(out).every((v) => v === null) ? null : JSON.stringify(out);
  }
  if (typeof item !== 'string') throw invalid(`Metadata field ${field.name}: a string value expected`);
  const text = item.trim();
  if (text === '') return null;
  if (field.type === 'email' && !EMAIL.test(text))
    throw invalid(`Metadata field ${field.name}: '${text}' is not an e-mail address`);
  if (field.type === 'url' && !isUrl(text)) throw invalid(`Metadata field ${field.name}: '${text}' is not a URL`);
  return text;
}

/** A submitted value (one item or an array) as the stored texts, in order; [] is no value. */
export function normalizeValue(field: MetadataField, value: unknown): string[] {
  const items = Array.isArray(value) ? value : [value];
  if (!isMultiValue(field) && items.length > 1) throw invalid(`Metadata field ${field.name} takes a single value`);
  if (field.maxOccurs > 1 && items.length > field.maxOccurs) {
    throw invalid(`Metadata field ${field.name} takes at most ${field.maxOccurs} values`);
  }
  return items.map((item) => normalizeItem(field, item)).filter((t): t is string => t !== null);
}

/** Stored text back to its API form. */
export async function decodeItem(field: MetadataField, stored: string, secrets: SecretBox): Promise<unknown> {
  if (field.type === 'password') return secrets.decrypt(stored);
  if (STRUCTURED_KEYS[field.type]) {
    try {
      return JSON.parse(stored);
    } catch {
      return null;
    }
  }
  return stored;
}

/** The API form of a field given its stored texts: arrays for multi-value fields, null when empty. */
export async function presentValue(field: MetadataField, stored: string[], secrets: SecretBox): Promise<unknown> {
  const items = await Promise.all(stored.map((s) => decodeItem(field, s, secrets)));
  if (isMultiValue(field)) return items.length ? items : null;
  return items[0] ?? null;
}

export const fieldDefaultStored = (field: MetadataField): string[] =>
  field.defaultValue === null ? [] : [field.defaultValue];
