import { useState } from 'preact/hooks';
import { del, get, post, query } from '../api.js';
import type { Contact, List } from '../types.js';
import { Alert, formatDate, ListTable, Page, useActionError, useLoad } from '../ui.js';

/** SPEC §14: contacts, by audience; add and delete. */
export function ContactsPage() {
  const [page, setPage] = useState(1);
  const [audience, setAudience] = useState('');
  const list = useLoad(
    () => get<List<Contact>>(`/contacts${query({ page, limit: 20, audience })}`).then((r) => r.body),
    [page, audience],
  );
  const [form, setForm] = useState({ email: '', firstName: '', lastName: '', audiences: '' });
  const submit = useActionError();
  const action = useActionError();

  // A refusal is shown; the list is read again either way (a 404: someone else removed it first).
  const remove = async (path: string) => {
    await action.run(() => del(path));
    list.reload();
  };

  return (
    <Page title="Contacts">
      <form
        class="panel"
        aria-labelledby="new-contact"
        onSubmit={async (e) => {
          e.preventDefault();
          const audiences = form.audiences
            .split(',')
            .map((a) => a.trim())
            .filter(Boolean);
          await submit.run(async () => {
            await post('/contacts', {
              email: form.email,
              ...(form.firstName ? { firstName: form.firstName } : {}),
              ...(form.lastName ? { lastName: form.lastName } : {}),
              ...(audiences.length ? { audiences } : {}),
            });
            setForm({ email: '', firstName: '', lastName: '', audiences: '' });
            list.reload();
          });
        }}
      >
        <h2 id="new-contact">New contact</h2>
        <label for="ct-email">Email address</label>
        <input
          id="ct-email"
          type="email"
          required
          value={form.email}
          onInput={(e) => setForm({ ...form, email: e.currentTarget.value })}
        />
        <label for="ct-first">First name</label>
        <input
          id="ct-first"
          value={form.firstName}
          onInput={(e) => setForm({ ...form, firstName: e.currentTarget.value })}
        />
        <label for="ct-last">Last name</label>
        <input
          id="ct-last"
          value={form.lastName}
          onInput={(e) => setForm({ ...form, lastName: e.currentTarget.value })}
        />
        <label for="ct-aud">Audiences (comma separated)</label>
        <input
          id="ct-aud"
          value={form.audiences}
          onInput={(e) => setForm({ ...form, audiences: e.currentTarget.value })}
        />
        <Alert message={submit.error} />
        <button type="submit">Add contact</button>
      </form>
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
        load={list}
        items={list.data?.data}
        what="contacts"
        label="Contacts"
        testId="contacts"
        columns={['Email', 'Name', 'Subscribed', 'Audiences', 'Added', 'Action']}
        actionError={action.error}
        pager={
          list.data && {
            page: list.data.meta.page,
            totalPages: list.data.meta.totalPages,
            onPage: setPage,
            label: 'Contact pages',
          }
        }
        row={(c) => (
          <tr key={c.id}>
            <th scope="row">{c.email}</th>
            <td>{[c.firstName, c.lastName].filter(Boolean).join(' ') || '—'}</td>
            <td>{c.subscribed ? 'yes' : 'no'}</td>
            <td>{c.audiences?.join(', ') ?? ''}</td>
            <td>{formatDate(c.createdAt)}</td>
            <td>
              <button
                type="button"
                class="secondary"
                aria-label={`Delete ${c.email}`}
                onClick={() => remove(`/contacts/${encodeURIComponent(c.id)}`)}
              >
                Delete
              </button>
            </td>
          </tr>
        )}
      />
    </Page>
  );
}
