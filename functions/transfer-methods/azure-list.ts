import type { ListedEntry } from '../../core/acquisition/selection.ts';
import { dateOf, nameUnder, unescapeXml, xmlElements, xmlValue } from './s3-wire.ts';

/**
 * The entries of a List Blobs page (with delimiter `/`) directly under `prefix`: its blobs as files,
 * its blob prefixes as directories. A blob named by the prefix itself (a folder marker) is no entry;
 * on an account with a hierarchical namespace, a directory is also a blob, which says so.
 */
export function listedBlobs(xml: string, prefix: string): ListedEntry[] {
  const files = xmlElements(xml, 'Blob').map((blob): ListedEntry => {
    const size = xmlValue(blob, 'Content-Length') ?? '';
    const directory = xmlValue(blob, 'ResourceType') === 'directory';
    return {
      name: nameUnder(prefix, blobName(blob)),
      type: directory ? 'directory' : 'file',
      size: directory || !/^\d+$/.test(size) ? null : Number(size),
      time: dateOf(xmlValue(blob, 'Last-Modified')),
    };
  });
  const directories = xmlElements(xml, 'BlobPrefix').map(
    (common): ListedEntry => ({
      name: nameUnder(prefix, blobName(common)).replace(/\/$/, ''),
      type: 'directory',
      size: null,
      time: null,
    }),
  );
  return [...files, ...directories].filter((entry) => entry.name !== '');
}

/**
 * The element's Name. A name XML cannot carry (control characters) comes URL-encoded, marked
 * `Encoded="true"`.
 */
function blobName(element: string): string | null {
  const match = /<Name(\s+Encoded="true")?\s*>([^<]*)<\/Name>/.exec(element);
  if (!match) return null;
  const name = unescapeXml(match[2]!);
  return match[1] ? decodeURIComponent(name) : name;
}
