import { useState } from 'preact/hooks';
import { del, get, post, query } from '../api.js';
import { TenantWide } from '../project.js';
import { EmptyState, ListTable, pagerOf } from '../table.js';
import type { List, Suppression } from '../types.js';
import { Alert, formatDate, Page, useActionError, useLoad } from '../ui.js';

/** SPEC §13: the addresses Tern never sends to, added by hand or by bounces and complaints. */
export function SuppressionsPage() {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => get<List<Suppression>>(`/suppressions${query({ page, limit: 20 })}`).then((r) => r.body),
    [page],
  );
  const [email, setEmail] = useState('');
  const [reason, setReason] = useState('');
  const form = useActionError();
  const action = useActionError();

  // A refusal is shown; the list is read again either way (a 404: someone else removed it first).
  const remove = async (path: string) => {
    await action.run(() => del(path));
    list.reload();
  };

  return (
    <Page title="Suppressions">
      <TenantWide what="Suppressions" />
      <form
        class="panel"
        aria-labelledby="new-suppression"
        onSubmit={async (e) => {
          e.preventDefault();
          await form.run(async () => {
            await post('/suppressions', { email, ...(reason ? { reason } : {}) });
            setEmail('');
            setReason('');
            list.reload();
          });
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
        <Alert message={form.error} />
        <button type="submit">Add</button>
      </form>
      <ListTable
        load={list}
        items={list.data?.data}
        what="suppressions"
        label="Suppressed addresses"
        testId="suppressions"
        columns={['Address', 'Reason', 'Source', 'Added', 'Action']}
        actionError={action.error}
        pager={pagerOf(list.data?.meta, setPage, 'Suppression pages')}
        empty={
          <EmptyState title="No suppressed address.">
            <p>
              Tern adds hard bounces, complaints and unsubscribes here on its own and never sends to them
              again. Add an address above to stop mail to it by hand.
            </p>
          </EmptyState>
        }
        row={(s) => (
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
        )}
      />
    </Page>
  );
}
