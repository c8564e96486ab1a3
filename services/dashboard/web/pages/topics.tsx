import { useState } from 'preact/hooks';
import { del, patch, post } from '../api.js';
import { ActionForm, Check, Field } from '../kit/form.js';
import { TenantPage, usePagedList } from '../kit/list-page.js';
import { EmptyState, ListTable, RowButton } from '../table.js';
import type { Topic } from '../types.js';
import { ConfirmButtons, formatDate, useRowActions } from '../ui.js';

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
  const action = useRowActions(list.reload);
  // The list is read again even when the topic is refused.
  const add = () =>
    post('/topics', { name, default: byDefault, public: isPublic })
      .then(() => setName(''))
      .finally(list.reload);

  return (
    <TenantPage title="Topics">
      <ActionForm id="new-topic" title="Add a topic" submit="Add topic" onSubmit={add}>
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
      </ActionForm>
      <ListTable
        {...table}
        what="topics"
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
    </TenantPage>
  );
}
