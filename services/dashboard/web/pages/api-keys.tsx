import { useState } from 'preact/hooks';
import { del, get, post } from '../api.js';
import { Check, CheckList, Field, PanelForm } from '../kit/form.js';
import { useProject } from '../project.js';
import { isAdmin, type Session } from '../session.js';
import { EmptyState, ListTable, RowButton } from '../table.js';
import { type ApiKey, type CreatedApiKey, SCOPES } from '../types.js';
import { ConfirmButtons, formatDate, Page, ShownOnce, useActionError, useLoad } from '../ui.js';

/** SPEC §8: create with scope checkboxes, the key shown once with copy, revoke. Owners and admins only. */
export function ApiKeysPage({ session }: { session: Session }) {
  if (!isAdmin(session)) {
    return (
      <Page title="API keys">
        <p class="notice" role="status">
          Only a tenant owner or admin manages API keys. You are signed in as a member.
        </p>
      </Page>
    );
  }
  return <ApiKeysAdmin tenantId={session.tenantId} />;
}

function ApiKeysAdmin({ tenantId }: { tenantId: string }) {
  const base = `/tenants/${encodeURIComponent(tenantId)}/api-keys`;
  const keys = useLoad(() => get<{ data: ApiKey[] }>(base).then((r) => r.body.data), [base]);
  const [created, setCreated] = useState<CreatedApiKey | undefined>();
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['email:send']);
  const [expiresAt, setExpiresAt] = useState('');
  const project = useProject();
  // With a project chosen, a new key is bound to it unless unticked (SPEC §16).
  const [bind, setBind] = useState(true);
  const form = useActionError();
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState<string | undefined>();
  const action = useActionError();

  const create = async () => {
    if (scopes.length === 0) return form.setError('Choose at least one scope.');
    setBusy(true);
    await form.run(async () => {
      const body = {
        name: name.trim(),
        scopes,
        ...(expiresAt ? { expiresAt: new Date(`${expiresAt}T23:59:59Z`).toISOString() } : {}),
        ...(project.id !== undefined && bind ? { projectId: project.id } : {}),
      };
      const res = await post<CreatedApiKey>(base, body);
      setCreated(res.body);
      setName('');
      setExpiresAt('');
      keys.reload();
    });
    setBusy(false);
  };

  const revoke = (id: string) =>
    action.run(async () => {
      await del(`${base}/${encodeURIComponent(id)}`);
      setConfirming(undefined);
      keys.reload();
    });

  return (
    <Page title="API keys">
      {created && (
        <ShownOnce label={`Key “${created.name}”`} value={created.key} onDone={() => setCreated(undefined)} />
      )}
      <PanelForm
        id="new-key"
        title="New key"
        submit="Create key"
        error={form.error}
        busy={busy}
        onSubmit={create}
      >
        <Field id="key-name" label="Name" required maxLength={100} value={name} onInput={setName} />
        <CheckList
          legend="Scopes"
          name="scope"
          class="scopes"
          choices={SCOPES}
          chosen={scopes}
          onChange={setScopes}
        />
        <Field
          id="key-expires"
          label="Expires (optional, end of day UTC)"
          type="date"
          value={expiresAt}
          onInput={setExpiresAt}
        />
        {project.id !== undefined && (
          <Check checked={bind} onChange={setBind}>
            Bind to the project “{project.name}” (the key then sends and reads only within it)
          </Check>
        )}
      </PanelForm>

      <h2>Keys</h2>
      {project.id !== undefined && (
        <p class="muted" data-testid="keys-scope">
          Keys bound to the project “{project.name}”. Choose “All projects” in the header to see every key.
        </p>
      )}
      <ListTable
        load={keys}
        items={project.id === undefined ? keys.data : keys.data?.filter((k) => k.projectId === project.id)}
        what="API keys"
        label="API keys"
        testId="api-keys"
        columns={['Name', 'Prefix', 'Scopes', 'Created', 'Last used', 'State']}
        actionError={action.error}
        empty={
          <EmptyState title={project.id === undefined ? 'No key yet.' : 'No key is bound to this project.'}>
            <p>
              Create one above: programs send with <code>email:send</code> and read the log with{' '}
              <code>email:read</code>. The key is shown once.
            </p>
          </EmptyState>
        }
        row={(k) => (
          <tr key={k.id} data-id={k.id}>
            <th scope="row">{k.name}</th>
            <td>
              <code>{k.prefix}…</code>
            </td>
            <td class="scopes-cell">{k.scopes.join(', ')}</td>
            <td>{formatDate(k.createdAt)}</td>
            <td>{formatDate(k.lastUsedAt)}</td>
            <td>
              {k.revokedAt ? (
                <span class="badge badge-revoked">revoked</span>
              ) : confirming === k.id ? (
                <span class="row">
                  <ConfirmButtons
                    label="Confirm revoke"
                    onConfirm={() => revoke(k.id)}
                    onKeep={() => setConfirming(undefined)}
                  />
                </span>
              ) : (
                <RowButton label={`Revoke ${k.name}`} onClick={() => setConfirming(k.id)}>
                  Revoke
                </RowButton>
              )}
            </td>
          </tr>
        )}
      />
    </Page>
  );
}
