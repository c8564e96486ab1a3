import { useState } from 'preact/hooks';
import { del, patch, post } from '../api.js';
import { Check, Field, PanelForm } from '../kit/form.js';
import { usePagedList } from '../kit/list-page.js';
import { TenantWide } from '../project.js';
import { EmptyState, ListTable, RowButton } from '../table.js';
import type { Topic } from '../types.js';
import { ConfirmButtons, formatDate, Page, useActionError, useRowActions } from '../ui.js';

const DEFAULTS = { opt_in: 'Subscribed unless they opt out', opt_out: 'Not subscribed unless they opt in' };

/**
 * SPEC §27 topics: what contacts subscribe to; a campaign or a sequence naming one reaches its
 * subscribers only; the public ones are the checkboxes of the unsubscribe link's preference page.
 */
export function TopicsPage() {
  const { list, table } = usePagedList<Topic>('/topics', 'Topic pages');
  const [name, setName] = useState('');
  const [byDefault, setByDefault] = useState<Topic['default']>('opt_in');
  const [isPublic, setPublic] = useState(true);
  const [confirming, setConfirming] = useState<string | null>(null);
  const form = useActionError();
  const action = useRowActions(list.reload);

  return (
    <Page title="Topics">
      <TenantWide what="Topics" />
      <PanelForm
        id="new-topic"
        title="Add a topic"
        submit="Add topic"
        error={form.error}
        onSubmit={async () => {
          const ok = await form.run(() => post('/topics', { name, default: byDefault, public: isPublic }));
          if (ok) setName('');
          list.reload();
        }}
      >
        <Field id="topic-name" label="Topic name" required maxLength={100} value={name} onInput={setName} />
        <label for="topic-default">Contacts who never chose</label>
        <select
          id="topic-default"
          value={byDefault}
          onChange={(e) => setByDefault(e.currentTarget.value as Topic['default'])}
        >
          <option value="opt_in">{DEFAULTS.opt_in}</option>
          <option value="opt_out">{DEFAULTS.opt_out}</option>
        </select>
        <Check checked={isPublic} onChange={setPublic}>
          Public: shown on the preference page of the unsubscribe link
        </Check>
      </PanelForm>
      <ListTable
        {...table}
        what="topics"
        label="Topics"
        testId="topics"
        columns={['Name', 'Default', 'Public', 'Id', 'Created', 'Action']}
        actionError={action.error}
        empty={
          <EmptyState title="No topic yet.">
            <p>
              Add one above (product updates, newsletter…): a campaign or a sequence naming it reaches its
              subscribers only, and your contacts choose their topics on the unsubscribe link’s page.
            </p>
          </EmptyState>
        }
        row={(t) => (
          <tr key={t.id} data-id={t.id}>
            <th scope="row">{t.name}</th>
            <td>{t.default === 'opt_in' ? 'opt-in' : 'opt-out'}</td>
            <td>{t.public ? 'yes' : 'no'}</td>
            <td>
              <code>{t.id}</code>
            </td>
            <td>
              <time dateTime={t.createdAt}>{formatDate(t.createdAt)}</time>
            </td>
            <td>
              {confirming === t.id ? (
                <ConfirmButtons
                  label={`Delete ${t.name}`}
                  onConfirm={() => {
                    setConfirming(null);
                    return action.act(() => del(`/topics/${encodeURIComponent(t.id)}`));
                  }}
                  onKeep={() => setConfirming(null)}
                />
              ) : (
                <div class="row">
                  <RowButton
                    label={t.public ? `Make private ${t.name}` : `Make public ${t.name}`}
                    onClick={() =>
                      action.act(() => patch(`/topics/${encodeURIComponent(t.id)}`, { public: !t.public }))
                    }
                  >
                    {t.public ? 'Make private' : 'Make public'}
                  </RowButton>
                  <RowButton label={`Delete ${t.name}`} onClick={() => setConfirming(t.id)}>
                    Delete
                  </RowButton>
                </div>
              )}
            </td>
          </tr>
        )}
      />
    </Page>
  );
}
