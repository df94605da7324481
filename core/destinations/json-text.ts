import { concatBytes, utf8 } from '../common/encoding.ts';

const decoder = new TextDecoder();

// From this size a text is kept as UTF-8: below it, joining text costs less than copying bytes.
const LARGE = 64 * 1024;

/**
 * A JSON value already serialized, which the transport writes into the answer as it is. The
 * database renders some large lists itself (see `DestinationRepo.listView`); decoding them
 * into objects only to serialize them again would cost more than the query. A large one is
 * kept as UTF-8, encoded once: a kept list is sent many times, and measuring and encoding
 * 2.4 MB of text cost more than the rest of the request.
 */
export class JsonText {
  private readonly small: string | null;
  private readonly encoded: Uint8Array | null;
  constructor(text: string) {
    this.small = text.length < LARGE ? text : null;
    this.encoded = this.small === null ? utf8(text) : null;
  }
  get large(): boolean {
    return this.encoded !== null;
  }
  get text(): string {
    return this.small ?? decoder.decode(this.encoded!);
  }
  get bytes(): Uint8Array {
    return this.encoded ?? utf8(this.small!);
  }
  /** What it holds in memory, in bytes or characters. */
  get size(): number {
    return this.encoded?.length ?? this.small!.length;
  }
}

/**
 * The JSON of a flat object whose values may be JsonText, keys in order, each JsonText
 * copied in as it is: UTF-8 bytes when one of them is large, otherwise text.
 */
export function answerBody(value: Record<string, unknown>): string | Uint8Array {
  let withJsonText = false;
  let withLarge = false;
  for (const key in value) {
    const member = value[key];
    if (member instanceof JsonText) {
      withJsonText = true;
      withLarge ||= member.large;
    }
  }
  if (!withJsonText) return JSON.stringify(value);
  const parts: Array<string | JsonText> = [];
  let separator = '{';
  for (const [key, member] of Object.entries(value)) {
    const text = member instanceof JsonText ? '' : JSON.stringify(member);
    // JSON.stringify leaves out members it cannot represent (undefined, functions).
    if (text === undefined) continue;
    parts.push(`${separator}${JSON.stringify(key)}:${text}`);
    if (member instanceof JsonText) parts.push(member);
    separator = ',';
  }
  parts.push(separator === '{' ? '{}' : '}');
  if (!withLarge) return parts.map((p) => (typeof p === 'string' ? p : p.text)).join('');
  return concatBytes(parts.map((p) => (typeof p === 'string' ? utf8(p) : p.bytes)));
}
