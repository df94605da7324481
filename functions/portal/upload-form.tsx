import { encodeSegment, type ListingRow } from '../../core/portal/tree.ts';
import { exactBytes, shortBytes } from './format.ts';
import { Notice } from './layout.tsx';
import type { UploadedFile } from './upload-receipt.ts';

/**
 * A folder's upload form: a plain multipart post that works without a script (the server answers
 * with the folder's page); with the page's script it is sent in the background with its progress
 * shown in `progress` and `.upload-status`, its failure in `.upload-problem`.
 */
export function UploadForm({ action, csrf }: { action: string; csrf: string }) {
  return (
    <section class="upload" aria-labelledby="upload-heading">
      <h2 id="upload-heading">Upload</h2>
      <form class="upload" method="post" enctype="multipart/form-data" action={action}>
        <input type="hidden" name="csrf" value={csrf} />
        <label for="upload-file">Files to upload to this folder</label>
        <input id="upload-file" type="file" name="file" multiple required aria-describedby="upload-hint" />
        <p id="upload-hint" class="muted hint">
          Each file is registered for dissemination once it has arrived; one of the same name is replaced.
        </p>
        <button type="submit">Upload</button>
        <progress max={100} value={0} aria-label="Upload progress" hidden />
        <p class="upload-status" role="status" />
        <p class="error upload-problem" role="alert" hidden />
      </form>
    </section>
  );
}

/** What the last upload registered: each file with its size and its data file. */
export function UploadedNotice({ files, rows }: { files: readonly UploadedFile[]; rows: readonly ListingRow[] }) {
  if (files.length === 0) return null;
  return (
    <Notice>
      <p>{files.length === 1 ? 'Uploaded and registered:' : `${files.length} files uploaded and registered:`}</p>
      <ul class="uploaded">
        {files.map(({ file, replaced }) => {
          const name = file.path.slice(file.path.lastIndexOf('/') + 1);
          const listed = rows.some((row) => row.type === 'file' && row.name === name);
          return (
            <li>
              {listed ? <a href={encodeSegment(name)}>{name}</a> : <strong>{name}</strong>}
              {', '}
              <span title={exactBytes(file.size)}>{shortBytes(file.size)}</span>
              {`, data file ${file.dataFileId}`}
              {replaced && ', in place of the file of the same name'}
            </li>
          );
        })}
      </ul>
    </Notice>
  );
}
