import { useState } from 'preact/hooks';
import { del, download, post, query, type UploadProgress, upload } from '../api.js';
import { ActionForm, Field } from '../kit/form.js';
import { TenantPage, usePagedList } from '../kit/list-page.js';
import { EmptyState, ListTable, RowButton, TableWrap } from '../table.js';
import type { Contact, ImportResult } from '../types.js';
import { Alert, formatDate, formatNumber, ProgressBar, useActionError, useRowActions } from '../ui.js';

/** Refused rows shown under an import's result (the API keeps the first 1000). */
const SHOWN_ERRORS = 50;

/** SPEC §14: contacts, by audience; add and delete; CSV import (with progress) and export. */
export function ContactsPage() {
  const [audience, setAudience] = useState('');
  const { list, setPage, table } = usePagedList<Contact>('/contacts', 'Contact pages', { audience });
  const [form, setForm] = useState({ email: '', firstName: '', lastName: '', audiences: '' });
  const action = useRowActions(list.reload);
  /** A field of the form: its value and its input. */
  const bind = (key: keyof typeof form) => ({
    value: form[key],
    onInput: (value: string) => setForm({ ...form, [key]: value }),
  });
  const add = async () => {
    const audiences = form.audiences
      .split(',')
      .map((a) => a.trim())
      .filter(Boolean);
    await post('/contacts', {
      email: form.email,
      ...(form.firstName ? { firstName: form.firstName } : {}),
      ...(form.lastName ? { lastName: form.lastName } : {}),
      ...(audiences.length ? { audiences } : {}),
    });
    setForm({ email: '', firstName: '', lastName: '', audiences: '' });
    list.reload();
  };

  return (
    <TenantPage title="Contacts">
      <ActionForm id="new-contact" title="New contact" submit="Add contact" onSubmit={add}>
        <Field id="ct-email" label="Email address" type="email" required {...bind('email')} />
        <Field id="ct-first" label="First name" {...bind('firstName')} />
        <Field id="ct-last" label="Last name" {...bind('lastName')} />
        <Field id="ct-aud" label="Audiences (comma separated)" {...bind('audiences')} />
      </ActionForm>
      <ImportExport audience={audience} onImported={list.reload} />
      <div class="filters">
        <label for="ct-filter">Audience</label>
        <input
          id="ct-filter"
          value={audience}
          onChange={(e) => {
            setAudience(e.currentTarget.value.trim());
            setPage(1);
          }}
        />
      </div>
      <ListTable
        {...table}
        what="contacts"
        columns={['Email', 'Name', 'Subscribed', 'Audiences', 'Added', 'Action']}
        actionError={action.error}
        empty={
          <EmptyState title={audience ? `No contact in the audience “${audience}”.` : 'No contact yet.'}>
            <p>
              Add one above or import a CSV file (a header row with an <code>email</code> column). Campaigns
              go to the subscribed contacts of an audience; sequences enroll contacts one by one.
            </p>
          </EmptyState>
        }
        row={(c) => (
          <tr key={c.id}>
            <th scope="row">{c.email}</th>
            <td>{[c.firstName, c.lastName].filter(Boolean).join(' ') || '—'}</td>
            <td>{c.subscribed ? 'yes' : 'no'}</td>
            <td>{c.audiences?.join(', ') ?? ''}</td>
            <td>{formatDate(c.createdAt)}</td>
            <td>
              <RowButton
                label={`Delete ${c.email}`}
                onClick={() => action.act(() => del(`/contacts/${encodeURIComponent(c.id)}`))}
              >
                Delete
              </RowButton>
            </td>
          </tr>
        )}
      />
    </TenantPage>
  );
}

type ImportState =
  | { phase: 'idle' }
  | { phase: 'uploading'; progress: UploadProgress }
  | { phase: 'done'; progress: UploadProgress; result: ImportResult };

/**
 * `POST /contacts/import` with the upload's progress (the API reads the rows as they arrive, so
 * the bytes sent are the rows read), then the result: created, updated, refused rows with their
 * reasons. `GET /contacts/export` saves the list (of the audience filter, when set) as a file.
 */
function ImportExport({ audience, onImported }: { audience: string; onImported: () => void }) {
  const [file, setFile] = useState<File | undefined>();
  const [into, setInto] = useState('');
  const [state, setState] = useState<ImportState>({ phase: 'idle' });
  const importing = useActionError();
  const exporting = useActionError();
  const [exported, setExported] = useState<string | undefined>();

  const start = async (e: Event) => {
    e.preventDefault();
    if (!file) return importing.setError('Choose a CSV file first.');
    setState({ phase: 'uploading', progress: { loaded: 0, total: file.size } });
    const ok = await importing.run(async () => {
      const res = await upload<ImportResult>(
        `/contacts/import${query({ audience: into.trim() })}`,
        file,
        'text/csv',
        (progress) => setState({ phase: 'uploading', progress }),
      );
      setState({ phase: 'done', progress: { loaded: file.size, total: file.size }, result: res.body });
      onImported();
    });
    if (!ok) setState({ phase: 'idle' });
  };

  const exportCsv = () =>
    exporting.run(async () => {
      setExported(undefined);
      const bytes = await download(`/contacts/export${query({ audience })}`, 'contacts.csv');
      setExported(
        `Saved contacts.csv (${formatNumber(bytes)} bytes${audience ? `, audience “${audience}”` : ''}).`,
      );
    });

  const progress = state.phase === 'idle' ? undefined : state.progress;
  const percent = progress ? Math.floor((100 * progress.loaded) / Math.max(progress.total, 1)) : 0;
  return (
    <section class="panel" aria-labelledby="import-export">
      <h2 id="import-export">Import and export</h2>
      <form onSubmit={start}>
        <label for="ct-file">CSV file</label>
        <input
          id="ct-file"
          type="file"
          accept=".csv,text/csv"
          aria-describedby="ct-file-help"
          onChange={(e) => {
            setFile(e.currentTarget.files?.[0]);
            setState({ phase: 'idle' });
          }}
        />
        <p class="muted" id="ct-file-help">
          A header row names the columns: <code>email</code> (required), <code>first_name</code>,{' '}
          <code>last_name</code>, <code>subscribed</code>, <code>audiences</code> (joined by <code>;</code>),{' '}
          <code>attributes</code> (JSON). A known address is updated; an export imports back unchanged.
        </p>
        <label for="ct-into">Add every imported contact to the audience (optional)</label>
        <input id="ct-into" value={into} onInput={(e) => setInto(e.currentTarget.value)} />
        <Alert message={importing.error} />
        <div class="row">
          <button type="submit" disabled={state.phase === 'uploading'}>
            Import
          </button>
          <button type="button" class="secondary" onClick={exportCsv}>
            Export CSV{audience ? ` of “${audience}”` : ''}
          </button>
        </div>
      </form>
      {progress && (
        <ProgressBar
          id="import-progress"
          label="Import"
          value={progress.loaded}
          max={progress.total}
          text={
            state.phase === 'done'
              ? 'Done.'
              : progress.loaded < progress.total
                ? `${percent}% sent (${formatNumber(progress.loaded)} of ${formatNumber(progress.total)} bytes): rows are read as they arrive.`
                : 'All sent: Tern is writing the last rows…'
          }
        />
      )}
      {state.phase === 'done' && <ImportOutcome result={state.result} />}
      <Alert message={exporting.error} />
      {exported && (
        <p class="muted" role="status" data-testid="exported">
          {exported}
        </p>
      )}
    </section>
  );
}

function ImportOutcome({ result }: { result: ImportResult }) {
  const figures = [
    ['rows', 'Rows read', result.rows],
    ['created', 'Created', result.created],
    ['updated', 'Updated', result.updated],
    ['failed', 'Refused', result.failed],
  ] as const;
  return (
    <div role="status" data-testid="import-result">
      <dl class="cards">
        {figures.map(([key, label, n]) => (
          <div class="card" key={key}>
            <dt>{label}</dt>
            <dd>
              <span class="figure" data-testid={`import-${key}`}>
                {formatNumber(n)}
              </span>
            </dd>
          </div>
        ))}
      </dl>
      {result.errors.length > 0 && (
        <>
          <h3>Refused rows</h3>
          <TableWrap label="Refused rows">
            <table data-testid="import-errors">
              <thead>
                <tr>
                  <th scope="col" class="num">
                    Row
                  </th>
                  <th scope="col">Reason</th>
                </tr>
              </thead>
              <tbody>
                {result.errors.slice(0, SHOWN_ERRORS).map((e) => (
                  <tr key={e.row}>
                    <th scope="row" class="num">
                      {e.row}
                    </th>
                    <td>{e.message}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          {result.failed > SHOWN_ERRORS && (
            <p class="muted">
              The first {SHOWN_ERRORS} of {formatNumber(result.failed)} refused rows (row 1 is the header).
            </p>
          )}
        </>
      )}
    </div>
  );
}
