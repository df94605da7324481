import { micromark } from 'micromark';
import { gfmTable, gfmTableHtml } from 'micromark-extension-gfm-table';

/**
 * Markdown to the safe subset of spec §2.5: headings, emphasis, lists, links, code, tables.
 * Raw HTML is never parsed as HTML (it stays escaped text), images are not recognised, and a
 * link keeps its target only for http, https and mailto (relative links carry no scheme).
 */
const NO_HTML_OR_IMAGES = { disable: { null: ['htmlFlow', 'htmlText', 'labelStartImage'] } };
const ALLOWED_SCHEME = /^(https?|mailto):/i;
const HAS_SCHEME = /^[a-z][a-z0-9+.-]*:/i;

export function renderMarkdown(source: string): string {
  const html = micromark(source, {
    allowDangerousHtml: false,
    allowDangerousProtocol: false,
    extensions: [gfmTable(), NO_HTML_OR_IMAGES],
    htmlExtensions: [gfmTableHtml()],
  });
  return html.replace(/href="([^"]*)"/g, (whole, target: string) =>
    HAS_SCHEME.test(decodeEntities(target)) && !ALLOWED_SCHEME.test(decodeEntities(target)) ? 'href=""' : whole,
  );
}

// micromark encodes attribute values; decode the few entities that could hide a scheme.
const decodeEntities = (text: string) =>
  text
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#x?[0-9a-f]+;/gi, '')
    .trim();

export const escapeHtml = (text: string) =>
  text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
