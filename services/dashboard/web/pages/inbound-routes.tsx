import { useState } from 'preact/hooks';
import { del, get, post, put, query } from '../api.js';
import { Field, Options } from '../kit/form.js';
import { EmptyState, ListTable, RowButton } from '../table.js';
import type { InboundRoute, List, Webhook } from '../types.js';
import { Alert, ConfirmButtons, useActionError, useLoad } from '../ui.js';

/**
 * The inbound routes (SPEC §24) of the Inbound page: which received mail goes where (a webhook, a
 * forward, stored only, dropped), in order, edited in place.
 */
/** `{ webhook: "we_x" }` → `webhook we_x`; `{ store: true }` → `store`. */
const actionLabel = (action: Record<string, unknown>) =>
  Object.entries(action)
    .map(([k, v]) => (v === true ? k : `${k} ${String(v)}`))
    .join(' ');

type ActionKind = 'webhook' | 'forward' | 'store' | 'drop';
/** One action as the form edits it: its kind and, for webhook and forward, its value. */
interface ActionDraft {
  kind: ActionKind;
  value: string;
}
interface RouteDraft {
  recipient: string;
  from: string;
  subject: string;
  priority: string;
  actions: ActionDraft[];
}
const EMPTY_ROUTE: RouteDraft = {
  recipient: '',
  from: '',
  subject: '',
  priority: '10',
  actions: [{ kind: 'store', value: '' }],
};
const ACTION_KINDS: { kind: ActionKind; label: string }[] = [
  { kind: 'store', label: 'Store (announce to nobody)' },
  { kind: 'webhook', label: 'Announce to one webhook' },
  { kind: 'forward', label: 'Forward to an address' },
  { kind: 'drop', label: 'Drop' },
];

function draftOf(r: InboundRoute): RouteDraft {
  return {
    recipient: r.match.recipient,
    from: r.match.from ?? '',
    subject: r.match.subject ?? '',
    priority: String(r.priority),
    actions: r.actions.map((a) => {
      const [kind, value] = Object.entries(a)[0] ?? ['store', true];
      return { kind: kind as ActionKind, value: value === true ? '' : String(value) };
    }),
  };
}

/** The body of `POST /inbound/routes` (and `PUT /inbound/routes/:id`) from the form. */
function bodyOf(d: RouteDraft) {
  return {
    match: {
      recipient: d.recipient.trim(),
      ...(d.from.trim() ? { from: d.from.trim() } : {}),
      ...(d.subject.trim() ? { subject: d.subject.trim() } : {}),
    },
    priority: Number(d.priority),
    actions: d.actions.map((a) =>
      a.kind === 'store' || a.kind === 'drop' ? { [a.kind]: true } : { [a.kind]: a.value.trim() },
    ),
  };
}

/** SPEC §24 routes: listed by priority, made, changed and deleted here (`inbound:manage`). */
export function InboundRoutes() {
  const routes = useLoad(() => get<{ data: InboundRoute[] }>('/inbound/routes').then((r) => r.body.data), []);
  const endpoints = useLoad(
    () =>
      get<List<Webhook>>(`/webhooks${query({ limit: 100 })}`).then(
        (r) => r.body.data,
        () => [] as Webhook[],
      ),
    [],
  );
  // undefined: no form open; null: a new route; an id: that route.
  const [editing, setEditing] = useState<string | null | undefined>();
  const [draft, setDraft] = useState<RouteDraft>(EMPTY_ROUTE);
  const [confirming, setConfirming] = useState<string | undefined>();
  const form = useActionError();
  const rows = useActionError();

  const open = (route: InboundRoute | null) => {
    form.setError(undefined);
    setDraft(route ? draftOf(route) : EMPTY_ROUTE);
    setEditing(route ? route.id : null);
  };
  const save = async (e: Event) => {
    e.preventDefault();
    const ok = await form.run(() =>
      editing
        ? put(`/inbound/routes/${encodeURIComponent(editing)}`, bodyOf(draft))
        : post('/inbound/routes', bodyOf(draft)),
    );
    if (ok) {
      setEditing(undefined);
      routes.reload();
    }
  };
  const remove = async (id: string) => {
    setConfirming(undefined);
    await rows.run(() => del(`/inbound/routes/${encodeURIComponent(id)}`));
    routes.reload();
  };
  const setAction = (i: number, next: Partial<ActionDraft>) =>
    setDraft((d) => ({ ...d, actions: d.actions.map((a, j) => (j === i ? { ...a, ...next } : a)) }));

  return (
    <>
      <h2 id="inbound-routes">Routes</h2>
      {editing === undefined && (
        <p>
          <button type="button" onClick={() => open(null)}>
            New route
          </button>
        </p>
      )}
      {editing !== undefined && (
        <form class="panel" onSubmit={save} aria-labelledby="route-form-title">
          <h3 id="route-form-title">{editing === null ? 'New route' : 'Edit route'}</h3>
          <p class="muted">
            Patterns: an exact address, <code>*@domain</code> or a <code>/regex/</code> (any case). The first
            matching route by priority (lowest first) acts.
          </p>
          <Field
            id="route-recipient"
            label="Recipient pattern"
            required
            maxLength={320}
            value={draft.recipient}
            onInput={(recipient) => setDraft({ ...draft, recipient })}
          />
          <Field
            id="route-from"
            label="From pattern (optional)"
            maxLength={320}
            value={draft.from}
            onInput={(from) => setDraft({ ...draft, from })}
          />
          <Field
            id="route-subject"
            label="Subject pattern (optional)"
            maxLength={320}
            value={draft.subject}
            onInput={(subject) => setDraft({ ...draft, subject })}
          />
          <Field
            id="route-priority"
            label="Priority"
            type="number"
            required
            min={0}
            max={1000000}
            step={1}
            value={draft.priority}
            onInput={(priority) => setDraft({ ...draft, priority })}
          />
          <fieldset>
            <legend>Actions</legend>
            {draft.actions.map((a, i) => (
              <div class="row" key={i}>
                <label for={`route-action-${i}`}>Action {i + 1}</label>
                <select
                  id={`route-action-${i}`}
                  value={a.kind}
                  onChange={(e) => setAction(i, { kind: e.currentTarget.value as ActionKind, value: '' })}
                >
                  <Options items={ACTION_KINDS} value={(k) => k.kind} label={(k) => k.label} />
                </select>
                {a.kind === 'forward' && (
                  <Field
                    id={`route-forward-${i}`}
                    label={`Forward to (action ${i + 1})`}
                    type="email"
                    required
                    value={a.value}
                    onInput={(value) => setAction(i, { value })}
                  />
                )}
                {a.kind === 'webhook' && (
                  <>
                    <label for={`route-webhook-${i}`}>Webhook endpoint (action {i + 1})</label>
                    <select
                      id={`route-webhook-${i}`}
                      required
                      value={a.value}
                      onChange={(e) => setAction(i, { value: e.currentTarget.value })}
                    >
                      <option value="">Choose an endpoint</option>
                      <Options items={endpoints.data} value={(w) => w.id} label={(w) => w.url} />
                    </select>
                  </>
                )}
                {draft.actions.length > 1 && (
                  <RowButton
                    label={`Remove action ${i + 1}`}
                    onClick={() => setDraft({ ...draft, actions: draft.actions.filter((_, j) => j !== i) })}
                  >
                    Remove
                  </RowButton>
                )}
              </div>
            ))}
            {draft.actions.length < 10 && (
              <button
                type="button"
                class="secondary"
                onClick={() =>
                  setDraft({ ...draft, actions: [...draft.actions, { kind: 'store', value: '' }] })
                }
              >
                Add action
              </button>
            )}
          </fieldset>
          <Alert message={form.error} />
          <div class="row">
            <button type="submit">{editing === null ? 'Create route' : 'Save route'}</button>
            <button type="button" class="secondary" onClick={() => setEditing(undefined)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      <Alert message={rows.error} />
      <ListTable
        load={routes}
        items={routes.data}
        what="inbound routes"
        label="Inbound routes"
        testId="inbound-routes"
        columns={['Priority', 'Recipient', 'From', 'Subject', 'Actions', 'Manage']}
        empty={
          <EmptyState title="No route.">
            <p>
              Without one, received mail is stored and announced to every webhook subscribed to{' '}
              <code>email.received</code>.
            </p>
          </EmptyState>
        }
        row={(r) => (
          <tr key={r.id} data-id={r.id}>
            <td>{r.priority}</td>
            <th scope="row">
              <code>{r.match.recipient}</code>
            </th>
            <td>{r.match.from ?? '—'}</td>
            <td>{r.match.subject ?? '—'}</td>
            <td>{r.actions.map(actionLabel).join(', ')}</td>
            <td>
              {confirming === r.id ? (
                <span class="row">
                  <ConfirmButtons
                    label="Confirm delete"
                    onConfirm={() => void remove(r.id)}
                    onKeep={() => setConfirming(undefined)}
                  />
                </span>
              ) : (
                <span class="row">
                  <RowButton label={`Edit route ${r.match.recipient}`} onClick={() => open(r)}>
                    Edit
                  </RowButton>
                  <RowButton label={`Delete route ${r.match.recipient}`} onClick={() => setConfirming(r.id)}>
                    Delete
                  </RowButton>
                </span>
              )}
            </td>
          </tr>
        )}
      />
    </>
  );
}
