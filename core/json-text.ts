/**
 * A JSON value already serialized, which the transport writes into the answer as it is. The
 * database renders some large lists itself (see `DestinationRepo.listView`); decoding them
 * into objects only to serialize them again would cost more than the query.
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/** JSON.stringify of a flat object whose values may be JsonText, keeping key order. */
export function stringifyWithJsonText(value: Record<string, unknown>): string {
  if (!Object.values(value).some((v) => v instanceof JsonText)) return JSON.stringify(value);
  const members: string[] = [];
  for (const [key, member] of Object.entries(value)) {
    if (member instanceof JsonText) members.push(`${JSON.stringify(key)}:${member.text}`);
    else {
      const text = JSON.stringify(member);
      // JSON.stringify leaves out members it cannot represent (undefined, functions).
      if (text !== undefined) members.push(`${JSON.stringify(key)}:${text}`);
    }
  }
  return `{${members.join(',')}}`;
}
