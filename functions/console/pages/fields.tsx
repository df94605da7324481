import type { Context, Hono } from 'hono';
import { isServiceError } from '../../../core/common/errors.ts';
import { importFields } from '../../../core/metadata/fields.ts';
import { FIELD_TYPES, type MetadataField } from '../../../core/metadata/model.ts';
import { Csrf, ErrorNote, Page } from '../layout.tsx';
import type { ConsoleEnv } from '../session.ts';

type C = Context<ConsoleEnv>;
type Draft = Partial<Omit<MetadataField, 'id'>>;

/** The form as a definition for the same validation as `fields import`. */
function definitionFrom(form: Record<string, unknown>) {
  const text = (k: string) => String(form[k] ?? '').trim();
  const orNull = (k: string) => (text(k) === '' ? null : text(k));
  const int = (k: string, fallback: number) => (text(k) === '' ? fallback : Number(text(k)));
  return {
    name: text('name'),
    label: text('label'),
    type: text('type'),
    category: text('category'),
    tooltip: orNull('tooltip'),
    defaultValue: orNull('defaultValue'),
    editable: form.editable === 'on',
    maxOccurs: int('maxOccurs', 1),
    position: int('position', 0),
    active: form.active === 'on',
  };
}

function FieldForm({ c, draft, existing, error }: { c: C; draft: Draft; existing: boolean; error?: string }) {
  const input = (name: keyof Draft, label: string, type = 'text') => (
    <>
      <label for={name}>{label}</label>
      <input
        id={name}
        name={name}
        type={type}
        value={draft[name] === null || draft[name] === undefined ? '' : String(draft[name])}
        readonly={existing && name === 'name'}
      />
    </>
  );
  return (
    <form method="post" action="/console/fields">
      <ErrorNote message={error} />
      <Csrf token={c.get('user')!.csrf} />
      {input('name', existing ? 'Name (fixed)' : 'Name')}
      {input('label', 'Label')}
      <label for="type">Type</label>
      <select id="type" name="type">
        {FIELD_TYPES.map((t) => (
          <option value={t} selected={draft.type === t}>
            {t}
          </option>
        ))}
      </select>
      {input('category', 'Category')}
      {input('tooltip', 'Tooltip')}
      {input(
        'defaultValue',
        existing && draft.type === 'password'
          ? 'Default value (stored sealed and never shown: leave empty to keep it)'
          : 'Default value (a JSON object for contact, mail-group, switchboard)',
      )}
      {existing && draft.type === 'password' && (
        <label>
          <input type="checkbox" name="clearDefault" /> Remove the stored default
        </label>
      )}
      {input('maxOccurs', 'Maximum values (1 single, -1 any number)', 'number')}
      {input('position', 'Position in its category', 'number')}
      <label>
        <input type="checkbox" name="editable" checked={draft.editable ?? true} /> Editable per destination (unchecked:
        locked to the default)
      </label>
      <label>
        <input type="checkbox" name="active" checked={draft.active ?? true} /> Active
      </label>
      <button type="submit">Save field</button>
    </form>
  );
}

export function fieldPages(app: Hono<ConsoleEnv>) {
  const page = (c: C, title: string, body: unknown, status: 200 | 400 | 404 = 200) =>
    c.html(
      <Page title={title} user={c.get('user')!.userId} csrf={c.get('user')!.csrf}>
        {body as never}
      </Page>,
      status,
    );

  app.get('/fields', async (c) => {
    const fields = await c.get('ports').repos.metadata.fields();
    return page(
      c,
      'Metadata fields',
      <>
        <p>
          <a class="button" href="/console/fields/new">
            Create a field
          </a>
        </p>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Label</th>
                <th scope="col">Type</th>
                <th scope="col">Category</th>
                <th scope="col">Editable</th>
                <th scope="col">Values</th>
                <th scope="col">Active</th>
              </tr>
            </thead>
            <tbody>
              {fields.map((f) => (
                <tr>
                  <td>
                    <a href={`/console/fields/${f.id}`}>{f.name}</a>
                  </td>
                  <td>{f.label}</td>
                  <td>{f.type}</td>
                  <td>{f.category}</td>
                  <td>{f.editable ? 'yes' : 'locked'}</td>
                  <td>{f.maxOccurs === 1 ? 'one' : 'many'}</td>
                  <td>{f.active ? 'yes' : 'no'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </>,
    );
  });

  app.get('/fields/new', (c) =>
    page(c, 'Create a metadata field', <FieldForm c={c} draft={{ type: 'text' }} existing={false} />),
  );

  app.get('/fields/:id', async (c) => {
    const field = (await c.get('ports').repos.metadata.fields()).find((f) => String(f.id) === c.req.param('id'));
    if (!field) return page(c, 'Not found', <p>No such field.</p>, 404);
    // A password field's default is sealed at rest and never shown in a form.
    const draft = field.type === 'password' ? { ...field, defaultValue: null } : field;
    return page(c, `Field ${field.name}`, <FieldForm c={c} draft={draft} existing={true} />);
  });

  app.post('/fields', async (c) => {
    const form = await c.req.parseBody();
    const definition = definitionFrom(form);
    const ports = c.get('ports');
    const stored = (await ports.repos.metadata.fields()).find(
      (f) => f.name.toLowerCase() === definition.name.toLowerCase(),
    );
    const existing = stored !== undefined;
    try {
      // The form never shows a sealed password default: left empty, the stored one is kept.
      if (
        stored?.type === 'password' &&
        definition.type === 'password' &&
        definition.defaultValue === null &&
        stored.defaultValue !== null &&
        form.clearDefault !== 'on'
      ) {
        definition.defaultValue = await ports.secrets.decrypt(stored.defaultValue);
      }
      await importFields(ports, c.get('user')!.userId, [definition]);
      return c.redirect('/console/fields', 303);
    } catch (e) {
      if (!isServiceError(e)) throw e;
      const draft = {
        ...definition,
        defaultValue: definition.type === 'password' ? null : definition.defaultValue,
      } as Draft;
      return page(
        c,
        existing ? `Field ${definition.name}` : 'Create a metadata field',
        <FieldForm c={c} draft={draft} existing={existing} error={e.message} />,
        400,
      );
    }
  });
}
