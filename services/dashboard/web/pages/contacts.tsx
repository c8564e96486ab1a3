import { useState } from 'preact/hooks';
import { ApiError, del, get, post, query } from '../api.js';
import type { Contact, List } from '../types.js';
import { ErrorNotice, formatDate, Loading, Page, Pager, TableWrap, useLoad } from '../ui.js';

/** SPEC §14: contacts, by audience; add and delete. */
export function ContactsPage() {
  const [page, setPage] = useState(1);
  const [audience, setAudience] = useState('');
  const list = useLoad(
    () => get<List<Contact>>(`/contacts${query({ page, limit: 20, audience })}`).then((r) => r.body),
    [page, audience],
  );
  const [form, setForm] = useState({ email: '', firstName: '', lastName: '', audiences: '' });
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
    <Page title="Contacts">
      <form
        class="panel"
        aria-labelledby="new-contact"
        onSubmit={async (e) => {
          e.preventDefault();
          setError(undefined);
          const audiences = form.audiences
            .split(',')
            .map((a) => a.trim())
            .filter(Boolean);
          try {
            await post('/contacts', {
              email: form.email,
              ...(form.firstName ? { firstName: form.firstName } : {}),
              ...(form.lastName ? { lastName: form.lastName } : {}),
              ...(audiences.length ? { audiences } : {}),
            });
            setForm({ email: '', firstName: '', lastName: '', audiences: '' });
            list.reload();
          } catch (err) {
            setError(err instanceof ApiError ? err.message : String(err));
          }
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
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
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
      {list.error && <ErrorNotice error={list.error} what="contacts" />}
      {actionError && (
        <p class="error" role="alert">
          {actionError}
        </p>
      )}
      {!list.data && list.loading && <Loading />}
      {list.data && (
        <>
          <TableWrap label="Contacts">
            <table data-testid="contacts">
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Name</th>
                  <th scope="col">Subscribed</th>
                  <th scope="col">Audiences</th>
                  <th scope="col">Added</th>
                  <th scope="col">Action</th>
                </tr>
              </thead>
              <tbody>
                {list.data.data.map((c) => (
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
                ))}
              </tbody>
            </table>
          </TableWrap>
          <Pager
            page={list.data.meta.page}
            totalPages={list.data.meta.totalPages}
            onPage={setPage}
            label="Contact pages"
          />
        </>
      )}
    </Page>
  );
}
