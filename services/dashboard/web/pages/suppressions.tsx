import { useState } from 'preact/hooks';
import { ApiError, del, get, post, query } from '../api.js';
import type { List, Suppression } from '../types.js';
import { ErrorNotice, formatDate, Loading, Page, Pager, TableWrap, useLoad } from '../ui.js';

/** SPEC §13: the addresses Tern never sends to, added by hand or by bounces and complaints. */
export function SuppressionsPage() {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => get<List<Suppression>>(`/suppressions${query({ page, limit: 20 })}`).then((r) => r.body),
    [page],
  );
  const [email, setEmail] = useState('');
  const [reason, setReason] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [actionError, setActionError] = useState<string | undefined>();

  // A refusal is shown; the list is read again either way (a 404: someone else removed it first).
  const remove = async (path: string) => {
    setActionError(undefined);
    try {
      await del(path);
    } catch (err) {
      setActionError(err instanceof ApiError ? err.message : String(err));
    }
    list.reload();
  };

  return (
    <Page title="Suppressions">
      <form
        class="panel"
        aria-labelledby="new-suppression"
        onSubmit={async (e) => {
          e.preventDefault();
          setError(undefined);
          try {
            await post('/suppressions', { email, ...(reason ? { reason } : {}) });
            setEmail('');
            setReason('');
            list.reload();
          } catch (err) {
            setError(err instanceof ApiError ? err.message : String(err));
          }
        }}
      >
        <h2 id="new-suppression">Suppress an address</h2>
        <label for="sup-email">Email address</label>
        <input
          id="sup-email"
          type="email"
          required
          value={email}
          onInput={(e) => setEmail(e.currentTarget.value)}
        />
        <label for="sup-reason">Reason (optional)</label>
        <input id="sup-reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit">Add</button>
      </form>
      {list.error && <ErrorNotice error={list.error} what="suppressions" />}
      {actionError && (
        <p class="error" role="alert">
          {actionError}
        </p>
      )}
      {!list.data && list.loading && <Loading />}
      {list.data && (
        <>
          <TableWrap label="Suppressed addresses">
            <table data-testid="suppressions">
              <thead>
                <tr>
                  <th scope="col">Address</th>
                  <th scope="col">Reason</th>
                  <th scope="col">Source</th>
                  <th scope="col">Added</th>
                  <th scope="col">Action</th>
                </tr>
              </thead>
              <tbody>
                {list.data.data.map((s) => (
                  <tr key={s.email}>
                    <th scope="row">{s.email}</th>
                    <td>{s.reason ?? '—'}</td>
                    <td>{s.source ?? '—'}</td>
                    <td>{formatDate(s.createdAt)}</td>
                    <td>
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`Remove ${s.email}`}
                        onClick={() => remove(`/suppressions/${encodeURIComponent(s.email)}`)}
                      >
                        Remove
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <Pager
            page={list.data.meta.page}
            totalPages={list.data.meta.totalPages}
            onPage={setPage}
            label="Suppression pages"
          />
        </>
      )}
    </Page>
  );
}
