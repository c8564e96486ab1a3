import { useState } from 'preact/hooks';
import { del, get, patch, post, query } from '../api.js';
import { TenantWide } from '../project.js';
import { EmptyState, ListTable, pagerOf } from '../table.js';
import type { List, Topic } from '../types.js';
import { Alert, ConfirmButtons, formatDate, Page, useActionError, useLoad } from '../ui.js';

const DEFAULTS = { opt_in: 'Subscribed unless they opt out', opt_out: 'Not subscribed unless they opt in' };

/**
 * SPEC §27 topics: what contacts subscribe to; a campaign or a sequence naming one reaches its
 * subscribers only; the public ones are the checkboxes of the unsubscribe link's preference page.
 */
export function TopicsPage() {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => get<List<Topic>>(`/topics${query({ page, limit: 20 })}`).then((r) => r.body),
    [page],
  );
  const [name, setName] = useState('');
  const [byDefault, setByDefault] = useState<Topic['default']>('opt_in');
  const [isPublic, setPublic] = useState(true);
  const [confirming, setConfirming] = useState<string | null>(null);
  const form = useActionError();
  const action = useActionError();
  const act = async (run: () => Promise<unknown>) => {
    await action.run(run);
    list.reload();
  };

  return (
    <Page title="Topics">
      <TenantWide what="Topics" />
      <form
        class="panel"
        aria-labelledby="new-topic"
        onSubmit={async (e) => {
          e.preventDefault();
          const ok = await form.run(() => post('/topics', { name, default: byDefault, public: isPublic }));
          if (ok) setName('');
          list.reload();
        }}
      >
        <h2 id="new-topic">Add a topic</h2>
        <label for="topic-name">Topic name</label>
        <input
          id="topic-name"
          required
          maxLength={100}
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <label for="topic-default">Contacts who never chose</label>
        <select
          id="topic-default"
          value={byDefault}
          onChange={(e) => setByDefault(e.currentTarget.value as Topic['default'])}
        >
          <option value="opt_in">{DEFAULTS.opt_in}</option>
          <option value="opt_out">{DEFAULTS.opt_out}</option>
        </select>
        <label class="check">
          <input type="checkbox" checked={isPublic} onChange={(e) => setPublic(e.currentTarget.checked)} />
          Public: shown on the preference page of the unsubscribe link
        </label>
        <Alert message={form.error} />
        <button type="submit">Add topic</button>
      </form>
      <ListTable
        load={list}
        items={list.data?.data}
        what="topics"
        label="Topics"
        testId="topics"
        columns={['Name', 'Default', 'Public', 'Id', 'Created', 'Action']}
        actionError={action.error}
        pager={pagerOf(list.data?.meta, setPage, 'Topic pages')}
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
                    return act(() => del(`/topics/${encodeURIComponent(t.id)}`));
                  }}
                  onKeep={() => setConfirming(null)}
                />
              ) : (
                <div class="row">
                  <button
                    type="button"
                    class="secondary"
                    aria-label={t.public ? `Make private ${t.name}` : `Make public ${t.name}`}
                    onClick={() =>
                      act(() => patch(`/topics/${encodeURIComponent(t.id)}`, { public: !t.public }))
                    }
                  >
                    {t.public ? 'Make private' : 'Make public'}
                  </button>
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Delete ${t.name}`}
                    onClick={() => setConfirming(t.id)}
                  >
                    Delete
                  </button>
                </div>
              )}
            </td>
          </tr>
        )}
      />
    </Page>
  );
}
