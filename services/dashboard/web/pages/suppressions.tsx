import { useState } from 'preact/hooks';
import { del, post } from '../api.js';
import { Field, PanelForm } from '../kit/form.js';
import { usePagedList } from '../kit/list-page.js';
import { TenantWide } from '../project.js';
import { EmptyState, ListTable, RowButton } from '../table.js';
import type { Suppression } from '../types.js';
import { formatDate, Page, useActionError, useRowActions } from '../ui.js';

/** SPEC §13: the addresses Tern never sends to, added by hand or by bounces and complaints. */
export function SuppressionsPage() {
  const { list, table } = usePagedList<Suppression>('/suppressions', 'Suppression pages');
  const [email, setEmail] = useState('');
  const [reason, setReason] = useState('');
  const form = useActionError();
  const action = useRowActions(list.reload);

  return (
    <Page title="Suppressions">
      <TenantWide what="Suppressions" />
      <PanelForm
        id="new-suppression"
        title="Suppress an address"
        submit="Add"
        error={form.error}
        onSubmit={async () => {
          await form.run(async () => {
            await post('/suppressions', { email, ...(reason ? { reason } : {}) });
            setEmail('');
            setReason('');
            list.reload();
          });
        }}
      >
        <Field id="sup-email" label="Email address" type="email" required value={email} onInput={setEmail} />
        <Field id="sup-reason" label="Reason (optional)" value={reason} onInput={setReason} />
      </PanelForm>
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
    </Page>
  );
}
