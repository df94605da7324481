import { encodePath, type ListingRow } from '../../core/portal/tree.ts';
import { isoSeconds } from './format.ts';
import { PortalPage } from './layout.tsx';
import { ListingTable } from './listing-table.tsx';
import { OpenAccessNotice } from './open-access.tsx';
import { pageHeaderValues, scriptNonce } from './page-headers.ts';
import { UploadedNotice, UploadForm } from './upload-form.tsx';
import type { UploadedFile } from './upload-receipt.ts';
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
  /** The files the session's last upload here registered, for its confirmation. */
  uploaded?: readonly UploadedFile[];
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
    const body = listing.rows.map((r) => ({
      name: r.name,
      type: r.type,
      size: r.size,
      lastModified: r.lastModified && isoSeconds(r.lastModified),
    }));
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
  // The page's script is named by a nonce of this answer alone (page-headers.ts).
  const nonce = scriptNonce();
  const html = <ListingPage listing={listing} directory={directory} nextHref={nextHref} nonce={nonce} />;
  return new Response(`${html}`, {
    headers: { 'content-type': 'text/html; charset=UTF-8', ...HEADERS, ...pageHeaderValues(nonce) },
  });
}

const limitParameter = (limit: number | null) => (limit === null ? '' : `&limit=${limit}`);

/** RFC 4180: quoted when it holds a comma, a quote or a line break. */
const csvField = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);

function ListingPage(props: { listing: Listing; directory: string; nextHref: string | null; nonce: string }) {
  const { listing, directory, nextHref } = props;
  const { visitor, segments, rows } = listing;
  const home = visitor.base === '/portal/data/' ? 'Data' : `home/${visitor.identity.userId}`;
  const title = segments.length === 0 ? home : `${segments.join('/')}/`;
  return (
    <PortalPage title={title} session={visitor.session} scriptNonce={props.nonce}>
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
      <UploadedNotice files={listing.uploaded ?? []} rows={rows} />
      <ListingTable rows={rows} up={segments.length > 0} />
      {rows.length === 0 && <p class="notice">Nothing here yet.</p>}
      {nextHref !== null && (
        <p>
          <a rel="next" href={nextHref}>
            Next page
          </a>
        </p>
      )}
      {listing.uploadForm && visitor.session && <UploadForm action={directory} csrf={visitor.session.csrf} />}
    </PortalPage>
  );
}
