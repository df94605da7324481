import { encodeSegment, type FolderFiles as Files, type ListingRow } from '../../core/portal/tree.ts';
import { exactBytes, fileCount, grouped, isoSeconds, shortBytes, utcMinutes, utcSeconds } from './format.ts';

/** From this many entries a folder's page offers the filter box (its script shows it). */
export const FILTER_FROM = 10;

/**
 * A directory's entries as a table of plain `<a href>` links (what wget -r and rclone's http
 * remote follow). Sizes and times are short, the exact values on hover; a folder's size is how many
 * files it holds. The headers name the columns the page's script makes sortable, and its filter box
 * waits hidden until the script runs.
 */
export function ListingTable({ rows, up }: { rows: readonly ListingRow[]; up: boolean }) {
  return (
    <>
      {rows.length >= FILTER_FROM && (
        <div class="filter" hidden>
          <label for="filter">Filter by name</label>
          <input id="filter" type="search" autocomplete="off" spellcheck={false} />
          <span id="filter-count" class="muted" role="status" />
        </div>
      )}
      <div class="table-wrap">
        <table class="listing">
          <thead>
            <tr>
              <th scope="col" data-sort="name">
                Name
              </th>
              <th scope="col" class="size" data-sort="size">
                Size
              </th>
              <th scope="col" class="date" data-sort="date">
                Modified
              </th>
            </tr>
          </thead>
          <tbody>
            {up && (
              <tr class="up">
                <td>
                  <a href="../">../</a>
                </td>
                <td class="size" />
                <td class="date" />
              </tr>
            )}
            {rows.map((row) => (
              <Row row={row} />
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function Row({ row }: { row: ListingRow }) {
  const folder = row.type === 'directory';
  return (
    <tr data-name={row.name} class={folder ? 'folder' : undefined}>
      <td class="name">
        <a href={folder ? `${encodeSegment(row.name)}/` : encodeSegment(row.name)}>
          {folder ? `${row.name}/` : row.name}
        </a>
      </td>
      {row.type === 'file' && row.size !== null ? (
        <td class="size" data-bytes={row.size} title={exactBytes(row.size)}>
          {shortBytes(row.size)}
        </td>
      ) : folder && row.files !== undefined ? (
        <FolderFiles files={row.files} />
      ) : (
        // A file's size is hidden from a user without the `size` permission, and so are folders' counts.
        <td class="size">{folder ? '' : '—'}</td>
      )}
      <td class="date">
        {row.lastModified && (
          <time datetime={isoSeconds(row.lastModified)} title={utcSeconds(row.lastModified)}>
            {utcMinutes(row.lastModified)}
          </time>
        )}
      </td>
    </tr>
  );
}

/**
 * A folder's size: its files at any depth, counted up to a cap ("1,000+ files" beyond, which may
 * wrap on a phone), the count in words on hover; `data-files` for the script's sorting ("1000+"
 * past the cap).
 */
function FolderFiles({ files }: { files: Files }) {
  const { count, more } = files;
  const title = `${more ? `More than ${grouped(count)} files` : fileCount(count)} here and below`;
  return (
    <td class={more ? 'size files more' : 'size files'} data-files={more ? `${count}+` : count} title={title}>
      {fileCount(count, more)}
    </td>
  );
}
