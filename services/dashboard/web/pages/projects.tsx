import { useState } from 'preact/hooks';
import { del, get, patch, post, query } from '../api.js';
import { useProject } from '../project.js';
import { PROJECT_PARAM } from '../router.js';
import { EmptyState, ListTable, pagerOf } from '../table.js';
import type { List, Project } from '../types.js';
import { Alert, ConfirmButtons, formatDate, Page, useActionError, useLoad } from '../ui.js';

/**
 * SPEC §16: projects group a tenant's emails (and may bind API keys). Create, rename, delete (the
 * API refuses a project that still has emails: 409, shown). "Show" narrows the dashboard to one
 * project through the header's switcher.
 */
export function ProjectsPage() {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => get<List<Project>>(`/projects${query({ page, limit: 20 })}`).then((r) => r.body),
    [page],
  );
  const scope = useProject();
  const [name, setName] = useState('');
  const form = useActionError();
  const action = useActionError();
  const [renaming, setRenaming] = useState<{ id: string; name: string } | undefined>();
  const [confirming, setConfirming] = useState<string | undefined>();

  // The switcher's list changes with this one.
  const changed = () => {
    list.reload();
    scope.reload();
  };

  const rename = (e: Event) => {
    e.preventDefault();
    if (!renaming) return;
    return action.run(async () => {
      await patch(`/projects/${encodeURIComponent(renaming.id)}`, { name: renaming.name.trim() });
      setRenaming(undefined);
      changed();
    });
  };

  const remove = (id: string) =>
    action.run(async () => {
      setConfirming(undefined);
      await del(`/projects/${encodeURIComponent(id)}`);
      changed();
    });

  return (
    <Page title="Projects">
      <form
        class="panel"
        aria-labelledby="new-project"
        onSubmit={async (e) => {
          e.preventDefault();
          await form.run(async () => {
            await post('/projects', { name: name.trim() });
            setName('');
            changed();
          });
        }}
      >
        <h2 id="new-project">New project</h2>
        <label for="prj-name">Name</label>
        <input
          id="prj-name"
          required
          maxLength={100}
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <Alert message={form.error} />
        <button type="submit">Create project</button>
      </form>
      <ListTable
        load={list}
        items={list.data?.data}
        what="projects"
        label="Projects"
        testId="projects"
        columns={['Name', 'Id', 'Created', 'Actions']}
        actionError={action.error}
        empty={
          <EmptyState title="No project yet.">
            <p>
              A project groups emails: send with its <code>projectId</code> (or with an API key bound to it),
              then choose it in the header to see its overview and logs alone. Create one above.
            </p>
          </EmptyState>
        }
        pager={pagerOf(list.data?.meta, setPage, 'Project pages')}
        row={(p) => (
          <tr key={p.id} data-id={p.id}>
            <th scope="row">
              {renaming?.id === p.id ? (
                <form class="row" onSubmit={rename} aria-label={`Rename ${p.name}`}>
                  <label class="sr-only" for={`rename-${p.id}`}>
                    New name of {p.name}
                  </label>
                  <input
                    id={`rename-${p.id}`}
                    required
                    maxLength={100}
                    value={renaming.name}
                    onInput={(e) => setRenaming({ id: p.id, name: e.currentTarget.value })}
                  />
                  <button type="submit">Save name</button>
                  <button type="button" class="secondary" onClick={() => setRenaming(undefined)}>
                    Keep
                  </button>
                </form>
              ) : (
                p.name
              )}
            </th>
            <td>
              <code>{p.id}</code>
            </td>
            <td>{formatDate(p.createdAt)}</td>
            <td class="row">
              {confirming === p.id ? (
                <ConfirmButtons
                  label="Confirm delete"
                  onConfirm={() => remove(p.id)}
                  onKeep={() => setConfirming(undefined)}
                />
              ) : (
                <>
                  <a class="button secondary" href={`#/?${PROJECT_PARAM}=${encodeURIComponent(p.id)}`}>
                    Show<span class="sr-only"> {p.name}</span>
                  </a>
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Rename ${p.name}`}
                    onClick={() => setRenaming({ id: p.id, name: p.name })}
                  >
                    Rename
                  </button>
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Delete ${p.name}`}
                    onClick={() => setConfirming(p.id)}
                  >
                    Delete
                  </button>
                </>
              )}
            </td>
          </tr>
        )}
      />
    </Page>
  );
}
