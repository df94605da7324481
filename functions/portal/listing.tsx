import { encodePath, encodeSegment, type ListingRow } from '../../core/portal/tree.ts';
import { PortalPage } from './layout.tsx';
import { OpenAccessNotice } from './open-access.tsx';
import type { Visitor } from './who.ts';

/** A page of a directory of the tree, as the route found it. */
export interface Listing {
  visitor: Visitor;
  /** The directory's segments below the base: none for the destinations' root. */
  segments: readonly string[];
  rows: readonly ListingRow[];
  /** The cursor of the next page, when there is one. */
  next: string | null;
  /** The `?limit=` asked for, kept in the next page's link. */
  limit: number | null;
  /** A browser session that may upload here gets the form. */
  uploadForm: boolean;
}

type ListingType = 'html' | 'json' | 'csv';
const TYPES: Record<string, ListingType> = { 'text/html': 'html', 'application/json': 'json', 'text/csv': 'csv' };

/**
 * The type a client asks for by `Accept`, by its q-values (the first listed wins a tie): JSON or
 * CSV for programs that ask for them, HTML otherwise (browsers, wget, rclone's http remote).
 */
export function listingType(accept: string | undefined): ListingType {
  let best: { type: ListingType; q: number } | null = null;
  for (const item of (accept ?? '').split(',')) {
    const [range = '', ...params] = item.split(';').map((p) => p.trim().toLowerCase());
    const type = TYPES[range];
    if (type === undefined) continue;
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (Number.isFinite(q) && q > 0 && (best === null || q > best.q)) best = { type, q };
  }
  return best?.type ?? 'html';
}

const HEADERS = { 'cache-control': 'private, no-cache', vary: 'Accept' };

export function listingResponse(listing: Listing, accept: string | undefined): Response {
  const type = listingType(accept);
  const directory = `${listing.visitor.base}${listing.segments.length ? `${encodePath(listing.segments)}/` : ''}`;
  const nextHref =
    listing.next === null
      ? null
      : `${directory}?after=${encodeURIComponent(listing.next)}${limitParameter(listing.limit)}`;
  const link: Record<string, string> = nextHref === null ? {} : { link: `<${nextHref}>; rel="next"` };
  if (type === 'json') {
    const body = listing.rows.map((r) => ({ ...r, lastModified: r.lastModified && isoSeconds(r.lastModified) }));
    return Response.json(body, { headers: { ...HEADERS, ...link } });
  }
  if (type === 'csv') {
    const lines = [
      'name,type,size,lastModified',
      ...listing.rows.map((r) =>
        [csvField(r.name), r.type, r.size ?? '', r.lastModified ? isoSeconds(r.lastModified) : ''].join(','),
      ),
    ];
    return new Response(`${lines.join('\r\n')}\r\n`, {
      headers: { 'content-type': 'text/csv; charset=utf-8', ...HEADERS, ...link },
    });
  }
  const html = <ListingPage listing={listing} directory={directory} nextHref={nextHref} />;
  return new Response(`${html}`, { headers: { 'content-type': 'text/html; charset=UTF-8', ...HEADERS } });
}

const limitParameter = (limit: number | null) => (limit === null ? '' : `&limit=${limit}`);

/** A time as ISO 8601 in UTC, to the second (as Last-Modified has it). */
const isoSeconds = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** RFC 4180: quoted when it holds a comma, a quote or a line break. */
const csvField = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);

function ListingPage(props: { listing: Listing; directory: string; nextHref: string | null }) {
  const { listing, directory, nextHref } = props;
  const { visitor, segments, rows } = listing;
  const home = visitor.base === '/portal/data/' ? 'Data' : `home/${visitor.identity.userId}`;
  const title = segments.length === 0 ? home : `${segments.join('/')}/`;
  return (
    <PortalPage title={title} session={visitor.session}>
      <nav class="crumbs" aria-label="Where you are">
        <a href={visitor.base}>{home}</a>
        {segments.map((segment, i) => (
          <>
            {' / '}
            <a href={`${visitor.base}${encodePath(segments.slice(0, i + 1))}/`}>{segment}</a>
          </>
        ))}
        {' /'}
      </nav>
      {visitor.base !== '/portal/data/' && segments.length === 0 && (
        <OpenAccessNotice userId={visitor.identity.userId} />
      )}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col" class="size">
                Size (bytes)
              </th>
              <th scope="col">Modified (UTC)</th>
            </tr>
          </thead>
          <tbody>
            {segments.length > 0 && (
              <tr>
                <td>
                  <a href="../">../</a>
                </td>
                <td class="size" />
                <td />
              </tr>
            )}
            {rows.map((row) => {
              const name = row.type === 'directory' ? `${row.name}/` : row.name;
              const href = row.type === 'directory' ? `${encodeSegment(row.name)}/` : encodeSegment(row.name);
              return (
                <tr>
                  <td>
                    <a href={href}>{name}</a>
                  </td>
                  <td class="size">{row.type === 'file' ? (row.size ?? '—') : ''}</td>
                  <td>
                    {row.lastModified && (
                      <time datetime={isoSeconds(row.lastModified)}>{isoSeconds(row.lastModified)}</time>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {rows.length === 0 && <p class="notice">Nothing here yet.</p>}
      {nextHref !== null && (
        <p>
          <a rel="next" href={nextHref}>
            Next page
          </a>
        </p>
      )}
      {listing.uploadForm && visitor.session && (
        <form method="post" enctype="multipart/form-data" action={directory}>
          <input type="hidden" name="csrf" value={visitor.session.csrf} />
          <label>
            Upload a file here
            <input type="file" name="file" required />
          </label>
          <button type="submit">Upload</button>
        </form>
      )}
    </PortalPage>
  );
}
