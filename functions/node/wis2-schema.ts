import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
// WMO's WIS2 Notification Message schema (WNM 1.1.0, wmo-im/wis2-notification-message, schemas/), as published.
import schema from './wis2-notification-message.schema.json' with { type: 'json' };

/** Checks messages against the WNM schema; answers the schema's first errors, null when the message passes. */
export function wnmSchemaCheck(): (message: unknown) => string | null {
  const ajv = new Ajv2020({ allErrors: false, strict: false });
  addFormats(ajv);
  const validate = ajv.compile(schema);
  return (message) => {
    if (validate(message)) return null;
    return (validate.errors ?? [])
      .slice(0, 3)
      .map((e) => `${e.instancePath || '/'} ${e.message ?? 'invalid'}`)
      .join('; ');
  };
}
