export const FIELD_TYPES = [
  'text',
  'textarea',
  'markdown',
  'url',
  'email',
  'phone',
  'password',
  'contact',
  'mail-group',
  'switchboard',
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** Keys of the structured types; every key a string or null. */
export const STRUCTURED_KEYS: Partial<Record<FieldType, readonly string[]>> = {
  contact: ['name', 'email', 'phone', 'fax'],
  'mail-group': ['name', 'email'],
  switchboard: ['name', 'phone'],
};

export interface MetadataField {
  id: number;
  name: string;
  label: string;
  type: FieldType;
  category: string;
  tooltip: string | null;
  /** As stored: sealed for password fields. */
  defaultValue: string | null;
  editable: boolean;
  maxOccurs: number;
  position: number;
  active: boolean;
}

export type FieldDefinition = Omit<MetadataField, 'id'>;

export const isMultiValue = (f: Pick<MetadataField, 'maxOccurs'>) => f.maxOccurs !== 1;

/** A stored value row: text, JSON text for structured types, sealed text for passwords. */
export interface StoredValue {
  fieldId: number;
  position: number;
  value: string;
}
