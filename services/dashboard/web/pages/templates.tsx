import { useState } from 'preact/hooks';
import { del, get, post, put } from '../api.js';
import { AreaField, Field } from '../kit/form.js';
import { usePagedList } from '../kit/list-page.js';
import { TenantWide } from '../project.js';
import { isAdmin, type Session } from '../session.js';
import { EmptyState, ListTable, RowButton } from '../table.js';
import type { Rendered, Template } from '../types.js';
import { Alert, ConfirmButtons, HtmlPreview, Page, useActionError } from '../ui.js';

const EMPTY = { id: '', name: '', subject: '', html: '', text: '' };

/** SPEC §12: templates listed for everyone, edited by owners and admins, previewed through the API's renderer. */
export function TemplatesPage({ session }: { session: Session }) {
  const admin = isAdmin(session);
  const { list, table } = usePagedList<Template>('/templates', 'Template pages');
  const [editing, setEditing] = useState<typeof EMPTY & { existing: boolean }>();
  const saving = useActionError();
  const [variables, setVariables] = useState('{\n  "name": "Ada"\n}');
  const [preview, setPreview] = useState<Rendered | undefined>();
  const previewing = useActionError();
  const [confirming, setConfirming] = useState<string | undefined>();
  const action = useActionError();

  const remove = (id: string) =>
    action.run(async () => {
      await del(`/templates/${encodeURIComponent(id)}`);
      setConfirming(undefined);
      if (editing?.id === id) setEditing(undefined);
      list.reload();
    });

  const open = (id: string) =>
    action.run(async () => {
      const full = await get<Template>(`/templates/${encodeURIComponent(id)}`);
      setEditing({ ...EMPTY, ...nullsToEmpty(full.body), existing: true });
      setPreview(undefined);
      previewing.setError(undefined);
    });

  const save = async (e: Event) => {
    e.preventDefault();
    if (!editing) return;
    const body = {
      name: editing.name,
      subject: editing.subject,
      ...(editing.html ? { html: editing.html } : {}),
      ...(editing.text ? { text: editing.text } : {}),
    };
    await saving.run(async () => {
      const saved = editing.existing
        ? await put<Template>(`/templates/${encodeURIComponent(editing.id)}`, body)
        : await post<Template>('/templates', editing.id ? { ...body, id: editing.id } : body);
      setEditing({ ...EMPTY, ...nullsToEmpty(saved.body), existing: true });
      list.reload();
    });
  };

  const renderPreview = async (id: string) => {
    let vars: unknown;
    try {
      vars = JSON.parse(variables || '{}');
    } catch {
      return previewing.setError('Variables must be a JSON object.');
    }
    await previewing.run(async () => {
      const res = await post<Rendered>(`/templates/${encodeURIComponent(id)}/render`, { variables: vars });
      setPreview(res.body);
    });
  };

  return (
    <Page
      title="Templates"
      actions={
        admin && (
          <button
            type="button"
            onClick={() => {
              setEditing({ ...EMPTY, existing: false });
              setPreview(undefined);
            }}
          >
            New template
          </button>
        )
      }
    >
      <TenantWide what="Templates" />
      <ListTable
        {...table}
        what="templates"
        label="Templates"
        testId="templates"
        columns={['Name', 'Subject', 'Id', 'Actions']}
        actionError={action.error}
        empty={
          <EmptyState title="No template yet.">
            <p>
              {admin
                ? 'Create one with “New template”: a subject and an HTML or text body with {{variables}}, then send it by id or use it in a campaign.'
                : 'An owner or admin of the tenant creates them; you can then preview and use them.'}
            </p>
          </EmptyState>
        }
        row={(t) => (
          <tr key={t.id}>
            <th scope="row">{t.name}</th>
            <td>{t.subject}</td>
            <td>
              <code>{t.id}</code>
            </td>
            <td class="row">
              {confirming === t.id ? (
                <ConfirmButtons
                  label="Confirm delete"
                  onConfirm={() => remove(t.id)}
                  onKeep={() => setConfirming(undefined)}
                />
              ) : (
                <>
                  <RowButton label={`${admin ? 'Edit' : 'View'} ${t.name}`} onClick={() => open(t.id)}>
                    {admin ? 'Edit' : 'View'}
                  </RowButton>
                  {admin && (
                    <RowButton label={`Delete ${t.name}`} onClick={() => setConfirming(t.id)}>
                      Delete
                    </RowButton>
                  )}
                </>
              )}
            </td>
          </tr>
        )}
      />

      {editing && (
        <div class="split">
          <form class="panel" onSubmit={save} aria-labelledby="tpl-form">
            <h2 id="tpl-form">{editing.existing ? `Template ${editing.name}` : 'New template'}</h2>
            <fieldset disabled={!admin}>
              {!editing.existing && (
                <Field
                  id="tpl-id"
                  label="Id (optional)"
                  value={editing.id}
                  onInput={(id) => setEditing({ ...editing, id })}
                />
              )}
              <Field
                id="tpl-name"
                label="Name"
                required
                maxLength={100}
                value={editing.name}
                onInput={(name) => setEditing({ ...editing, name })}
              />
              <Field
                id="tpl-subject"
                label="Subject"
                required
                maxLength={998}
                value={editing.subject}
                onInput={(subject) => setEditing({ ...editing, subject })}
              />
              <AreaField
                id="tpl-html"
                label="HTML"
                rows={8}
                spellcheck={false}
                value={editing.html}
                onInput={(html) => setEditing({ ...editing, html })}
              />
              <AreaField
                id="tpl-text"
                label="Text"
                rows={4}
                value={editing.text}
                onInput={(text) => setEditing({ ...editing, text })}
              />
            </fieldset>
            <Alert message={saving.error} />
            {admin && <button type="submit">Save</button>}
          </form>
          {editing.existing && (
            <section class="panel" aria-labelledby="tpl-preview">
              <h2 id="tpl-preview">Preview</h2>
              <AreaField
                id="tpl-vars"
                label="Variables (JSON)"
                rows={4}
                spellcheck={false}
                value={variables}
                onInput={setVariables}
              />
              <button type="button" onClick={() => renderPreview(editing.id)}>
                Render preview
              </button>
              <Alert message={previewing.error} />
              {preview && (
                <div data-testid="preview">
                  <p>
                    <strong>Subject:</strong> <span data-testid="preview-subject">{preview.subject}</span>
                  </p>
                  {preview.html ? (
                    <HtmlPreview html={preview.html} title="Rendered template" />
                  ) : (
                    <pre class="text-body">{preview.text ?? ''}</pre>
                  )}
                </div>
              )}
            </section>
          )}
        </div>
      )}
    </Page>
  );
}

function nullsToEmpty(t: Template) {
  return { id: t.id, name: t.name, subject: t.subject, html: t.html ?? '', text: t.text ?? '' };
}
