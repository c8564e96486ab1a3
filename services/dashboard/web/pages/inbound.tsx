import { useState } from 'preact/hooks';
import { del, download, get, post, put, query } from '../api.js';
import { TenantWide } from '../project.js';
import { routeHref } from '../router.js';
import { EmptyState, ListTable } from '../table.js';
import type { InboundAuth, InboundList, InboundMessage, InboundRoute, List, Webhook } from '../types.js';
import {
  Alert,
  ConfirmButtons,
  ErrorNotice,
  formatDate,
  formatNumber,
  HtmlPreview,
  Loading,
  Page,
  useActionError,
  useLoad,
} from '../ui.js';

const LIMIT = 20;

/** SPEC §24: mail received at the tenant's addresses; `id` set → that message. */
export function InboundPage({ id }: { id: string }) {
  return id ? <InboundMessageView id={id} /> : <InboundListView />;
}

/** SPF, DKIM, DMARC and ARC as verified on arrival. */
function Verdicts({ auth }: { auth: InboundAuth }) {
  return (
    <span class="verdicts">
      {(['spf', 'dkim', 'dmarc', 'arc'] as const).map((k) => (
        <span key={k} class={`badge verdict-${auth[k]}`}>
          {k.toUpperCase()} {auth[k]}
        </span>
      ))}
    </span>
  );
}

/** `{ webhook: "we_x" }` → `webhook we_x`; `{ store: true }` → `store`. */
const actionLabel = (action: Record<string, unknown>) =>
  Object.entries(action)
    .map(([k, v]) => (v === true ? k : `${k} ${String(v)}`))
    .join(' ');

function InboundListView() {
  // The cursors of the pages shown so far: the last one is this page's (`''` for the newest).
  const [cursors, setCursors] = useState<string[]>(['']);
  const cursor = cursors[cursors.length - 1] ?? '';
  const list = useLoad(
    () => get<InboundList>(`/inbound${query({ limit: LIMIT, cursor })}`).then((r) => r.body),
    [cursor],
  );
  const address = useLoad(
    () =>
      get<{ domain: string }>('/inbound/domain').then(
        (r) => r.body.domain,
        () => null,
      ),
    [],
  );
  const next = list.data?.meta.nextCursor;
  return (
    <Page title="Inbound">
      <TenantWide what="Received mail" />
      <ListTable
        load={list}
        items={list.data?.data}
        what="received mail"
        label="Received mail"
        testId="inbound"
        columns={['From', 'To', 'Subject', 'Verdicts', 'Received']}
        empty={
          <EmptyState title="No mail received yet.">
            <p>
              {address.data ? (
                <>
                  Mail to any address at <code>{address.data}</code> arrives here,{' '}
                </>
              ) : (
                'Mail arrives here '
              )}
              as does mail to a domain with receiving on (Domains).
            </p>
          </EmptyState>
        }
        row={(m) => (
          <tr key={m.id}>
            <td>{m.from ?? '—'}</td>
            <td>{m.to.join(', ')}</td>
            <th scope="row">
              <a href={routeHref(`/inbound/${encodeURIComponent(m.id)}`)}>{m.subject || '(no subject)'}</a>
            </th>
            <td>
              <Verdicts auth={m.auth} />
            </td>
            <td>{formatDate(m.receivedAt)}</td>
          </tr>
        )}
      />
      {list.data && (cursors.length > 1 || next) && (
        <nav class="pager" aria-label="Received mail pages">
          <button
            type="button"
            disabled={cursors.length <= 1}
            onClick={() => setCursors(cursors.slice(0, -1))}
          >
            ← Newer
          </button>
          <span aria-live="polite">Page {cursors.length}</span>
          <button type="button" disabled={!next} onClick={() => next && setCursors([...cursors, next])}>
            Older →
          </button>
        </nav>
      )}
      <Routes />
    </Page>
  );
}

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
function Routes() {
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
          <label for="route-recipient">Recipient pattern</label>
          <input
            id="route-recipient"
            required
            maxLength={320}
            value={draft.recipient}
            onInput={(e) => setDraft({ ...draft, recipient: e.currentTarget.value })}
          />
          <label for="route-from">From pattern (optional)</label>
          <input
            id="route-from"
            maxLength={320}
            value={draft.from}
            onInput={(e) => setDraft({ ...draft, from: e.currentTarget.value })}
          />
          <label for="route-subject">Subject pattern (optional)</label>
          <input
            id="route-subject"
            maxLength={320}
            value={draft.subject}
            onInput={(e) => setDraft({ ...draft, subject: e.currentTarget.value })}
          />
          <label for="route-priority">Priority</label>
          <input
            id="route-priority"
            type="number"
            required
            min={0}
            max={1000000}
            step={1}
            value={draft.priority}
            onInput={(e) => setDraft({ ...draft, priority: e.currentTarget.value })}
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
                  {ACTION_KINDS.map((k) => (
                    <option key={k.kind} value={k.kind}>
                      {k.label}
                    </option>
                  ))}
                </select>
                {a.kind === 'forward' && (
                  <>
                    <label for={`route-forward-${i}`}>Forward to (action {i + 1})</label>
                    <input
                      id={`route-forward-${i}`}
                      type="email"
                      required
                      value={a.value}
                      onInput={(e) => setAction(i, { value: e.currentTarget.value })}
                    />
                  </>
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
                      {(endpoints.data ?? []).map((w) => (
                        <option key={w.id} value={w.id}>
                          {w.url}
                        </option>
                      ))}
                    </select>
                  </>
                )}
                {draft.actions.length > 1 && (
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Remove action ${i + 1}`}
                    onClick={() => setDraft({ ...draft, actions: draft.actions.filter((_, j) => j !== i) })}
                  >
                    Remove
                  </button>
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
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Edit route ${r.match.recipient}`}
                    onClick={() => open(r)}
                  >
                    Edit
                  </button>
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Delete route ${r.match.recipient}`}
                    onClick={() => setConfirming(r.id)}
                  >
                    Delete
                  </button>
                </span>
              )}
            </td>
          </tr>
        )}
      />
    </>
  );
}

function InboundMessageView({ id }: { id: string }) {
  const path = `/inbound/${encodeURIComponent(id)}`;
  const message = useLoad(() => get<InboundMessage>(path).then((r) => r.body), [path]);
  const saving = useActionError();
  const m = message.data;
  return (
    <Page title="Received message" actions={<a href={routeHref('/inbound')}>← Inbound</a>}>
      {message.error && <ErrorNotice error={message.error} what="the received message" />}
      {!m && message.loading && <Loading />}
      {m && (
        <>
          <dl class="fields" data-testid="inbound-message">
            <dt>Id</dt>
            <dd>
              <code>{m.id}</code>
            </dd>
            <dt>From</dt>
            <dd>{m.from ?? '—'}</dd>
            <dt>To</dt>
            <dd>{m.to.join(', ')}</dd>
            {m.cc.length > 0 && (
              <>
                <dt>Cc</dt>
                <dd>{m.cc.join(', ')}</dd>
              </>
            )}
            <dt>Subject</dt>
            <dd>{m.subject ?? '—'}</dd>
            <dt>Received</dt>
            <dd>{formatDate(m.receivedAt)}</dd>
            <dt>Verdicts</dt>
            <dd data-testid="inbound-verdicts">
              <Verdicts auth={m.auth} />
            </dd>
            <dt>Sent by</dt>
            <dd>
              {m.clientIp ?? '—'} {m.helo && <code>HELO {m.helo}</code>}
            </dd>
            {m.messageId && (
              <>
                <dt>Message-ID</dt>
                <dd>
                  <code>{m.messageId}</code>
                </dd>
              </>
            )}
            {m.inReplyTo && (
              <>
                <dt>In reply to</dt>
                <dd>
                  <a href={routeHref(`/emails/${encodeURIComponent(m.inReplyTo)}`)}>{m.inReplyTo}</a>
                </dd>
              </>
            )}
          </dl>
          <h2>Content</h2>
          {/* The sender's HTML in a sandboxed frame (no script, no same origin), never in this page. */}
          {m.html ? (
            <HtmlPreview html={m.html} title="Received HTML" />
          ) : (
            <pre class="text-body" data-testid="inbound-text">
              {m.text ?? ''}
            </pre>
          )}
          <h2>Attachments</h2>
          <Alert message={saving.error} />
          {m.attachments.length === 0 ? (
            <p>None.</p>
          ) : (
            <ul data-testid="inbound-attachments">
              {m.attachments.map((a) => {
                const name = a.filename ?? a.id;
                return (
                  <li key={a.id}>
                    <a
                      href={`${path}/attachments/${encodeURIComponent(a.id)}`}
                      onClick={(e) => {
                        // A plain link could not send the credential: read it, then save it.
                        e.preventDefault();
                        void saving.run(() =>
                          download(`${path}/attachments/${encodeURIComponent(a.id)}`, name),
                        );
                      }}
                    >
                      {name}
                    </a>{' '}
                    ({a.contentType}, {formatNumber(a.size)} bytes)
                  </li>
                );
              })}
            </ul>
          )}
          <p>
            <button
              type="button"
              class="secondary"
              onClick={() => saving.run(() => download(`${path}/raw`, `${m.id}.eml`))}
            >
              Download raw message
            </button>
          </p>
        </>
      )}
    </Page>
  );
}
