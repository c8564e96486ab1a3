import { useState } from 'preact/hooks';
import { del, post } from '../api.js';
import { ActionForm, Field } from '../kit/form.js';
import { TenantPage, usePagedList } from '../kit/list-page.js';
import { EmptyState, ListTable, RowButton } from '../table.js';
import type { Suppression } from '../types.js';
import { formatDate, useRowActions } from '../ui.js';

/** SPEC §13: the addresses Tern never sends to, added by hand or by bounces and complaints. */
export function SuppressionsPage() {
  const { list, table } = usePagedList<Suppression>('/suppressions', 'Suppression pages');
  const [email, setEmail] = useState('');
  const [reason, setReason] = useState('');
  const action = useRowActions(list.reload);
  const add = async () => {
    await post('/suppressions', { email, ...(reason ? { reason } : {}) });
    setEmail('');
    setReason('');
    list.reload();
  };

  return (
    <TenantPage title="Suppressions">
      <ActionForm id="new-suppression" title="Suppress an address" submit="Add" onSubmit={add}>
        <Field id="sup-email" label="Email address" type="email" required value={email} onInput={setEmail} />
        <Field id="sup-reason" label="Reason (optional)" value={reason} onInput={setReason} />
      </ActionForm>
      <ListTable
        {...table}
        what="suppressions"
        label="Suppressed addresses"
        testId="suppressions"
        columns={['Address', 'Reason', 'Source', 'Added', 'Action']}
        actionError={action.error}
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
              <RowButton
                label={`Remove ${s.email}`}
                onClick={() => action.act(() => del(`/suppressions/${encodeURIComponent(s.email)}`))}
              >
                Remove
              </RowButton>
            </td>
          </tr>
        )}
      />
    </TenantPage>
  );
}
