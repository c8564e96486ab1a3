import { useState } from 'preact/hooks';
import { del, patch, post } from '../api.js';
import { ActionForm, Field } from '../kit/form.js';
import { usePagedList } from '../kit/list-page.js';
import { useProject } from '../project.js';
import { PROJECT_PARAM } from '../router.js';
import { EmptyState, ListTable, RowButton } from '../table.js';
import type { Project } from '../types.js';
import { ConfirmButtons, formatDate, Page, useActionError } from '../ui.js';

/**
 * SPEC §16: projects group a tenant's emails (and may bind API keys). Create, rename, delete (the
 * API refuses a project that still has emails: 409, shown). "Show" narrows the dashboard to one
 * project through the header's switcher.
 */
export function ProjectsPage() {
  const { list, table } = usePagedList<Project>('/projects', 'Project pages');
  const scope = useProject();
  const [name, setName] = useState('');
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

  const add = async () => {
    await post('/projects', { name: name.trim() });
    setName('');
    changed();
  };

  return (
    <Page title="Projects">
      <ActionForm id="new-project" title="New project" submit="Create project" onSubmit={add}>
        <Field id="prj-name" label="Name" required maxLength={100} value={name} onInput={setName} />
      </ActionForm>
      <ListTable
        {...table}
        what="projects"
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
                  <RowButton
                    label={`Rename ${p.name}`}
                    onClick={() => setRenaming({ id: p.id, name: p.name })}
                  >
                    Rename
                  </RowButton>
                  <RowButton label={`Delete ${p.name}`} onClick={() => setConfirming(p.id)}>
                    Delete
                  </RowButton>
                </>
              )}
            </td>
          </tr>
        )}
      />
    </Page>
  );
}
