import { useState } from 'preact/hooks';
import { del, get, patch, post, query } from '../api.js';
import { CheckList, Field, PanelForm } from '../kit/form.js';
import { usePagedList } from '../kit/list-page.js';
import { TenantWide } from '../project.js';
import { EmptyState, Pager, pagerOf, TableHead, TableWrap } from '../table.js';
import { type Delivery, EVENT_TYPES, type List, type Webhook } from '../types.js';
import {
  ErrorNotice,
  errorMessage,
  formatDate,
  Loading,
  Page,
  ShownOnce,
  useActionError,
  useLoad,
} from '../ui.js';

/** SPEC §17: endpoints (create with the secret shown once, enable/disable, delete), deliveries, replay. */
export function WebhooksPage() {
  const { list, pager } = usePagedList<Webhook>('/webhooks', 'Endpoint pages');
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<string[]>([]);
  const [secret, setSecret] = useState<string | undefined>();
  const form = useActionError();
  const [open, setOpen] = useState<string | undefined>();

  const create = async () => {
    await form.run(async () => {
      const res = await post<Webhook>('/webhooks', {
        url,
        ...(events.length > 0 ? { events } : {}),
        ...(description ? { description } : {}),
      });
      setSecret(res.body.secret);
      setUrl('');
      setDescription('');
      setEvents([]);
      list.reload();
    });
  };

  return (
    <Page title="Webhooks">
      <TenantWide what="Webhook endpoints" />
      {secret && <ShownOnce label="Signing secret" value={secret} onDone={() => setSecret(undefined)} />}
      <PanelForm
        id="new-webhook"
        title="New endpoint"
        submit="Create endpoint"
        error={form.error}
        onSubmit={create}
      >
        <Field id="wh-url" label="URL" type="url" required value={url} onInput={setUrl} />
        <Field id="wh-desc" label="Description (optional)" value={description} onInput={setDescription} />
        <CheckList
          legend="Events (none checked: all)"
          class="scopes"
          choices={EVENT_TYPES}
          chosen={events}
          onChange={setEvents}
        />
      </PanelForm>
      <h2>Endpoints</h2>
      {list.error && <ErrorNotice error={list.error} what="webhooks" />}
      {!list.data && list.loading && <Loading />}
      {list.data &&
        (list.data.data.length === 0 ? (
          <EmptyState title="No endpoint yet.">
            <p>
              Add the URL of your server above: Tern then POSTs it every event of your mail (queued, sent,
              delivered, bounced, opened…), signed with the secret shown once.
            </p>
          </EmptyState>
        ) : (
          <ul class="plain" data-testid="webhooks">
            {list.data.data.map((w) => (
              <li key={w.id} class="panel">
                <p>
                  <strong class="break">{w.url}</strong>{' '}
                  {w.enabled ? '' : <span class="badge">disabled</span>}
                </p>
                <p class="muted">
                  {w.description ? `${w.description} · ` : ''}
                  {w.events === null || w.events.length === EVENT_TYPES.length
                    ? 'all events'
                    : w.events.join(', ')}
                </p>
                {w.disabledReason && <p class="error">{w.disabledReason}</p>}
                <div class="row">
                  <button
                    type="button"
                    class="secondary"
                    onClick={() => setOpen(open === w.id ? undefined : w.id)}
                  >
                    {open === w.id ? 'Hide deliveries' : 'Deliveries'}
                  </button>
                  <button
                    type="button"
                    class="secondary"
                    onClick={() =>
                      patch(`/webhooks/${w.id}`, { enabled: !w.enabled }).then(list.reload, list.reload)
                    }
                  >
                    {w.enabled ? 'Disable' : 'Enable'}
                  </button>
                  <button
                    type="button"
                    class="secondary"
                    onClick={() =>
                      post<{ secret: string }>(`/webhooks/${w.id}/rotate-secret`).then((r) =>
                        setSecret(r.body.secret),
                      )
                    }
                  >
                    Rotate secret
                  </button>
                  <button
                    type="button"
                    class="secondary"
                    onClick={() => del(`/webhooks/${w.id}`).then(list.reload, list.reload)}
                  >
                    Delete
                  </button>
                </div>
                {open === w.id && <Deliveries id={w.id} />}
              </li>
            ))}
          </ul>
        ))}
      {pager && <Pager {...pager} />}
    </Page>
  );
}

function Deliveries({ id }: { id: string }) {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () =>
      get<List<Delivery>>(`/webhooks/${encodeURIComponent(id)}/deliveries${query({ page, limit: 50 })}`).then(
        (r) => r.body,
      ),
    [id, page],
  );
  const pager = pagerOf(list.data?.meta, setPage, 'Delivery pages');
  const [since, setSince] = useState(() => new Date(Date.now() - 3600_000).toISOString().slice(0, 16));
  const [note, setNote] = useState<string | undefined>();
  return (
    <div>
      <form
        class="row"
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            await post(`/webhooks/${encodeURIComponent(id)}/replay`, {
              since: new Date(`${since}Z`).toISOString(),
            });
            setNote('Replay requested: past events are being delivered again.');
            list.reload();
          } catch (err) {
            setNote(errorMessage(err));
          }
        }}
      >
        <Field
          id={`replay-${id}`}
          label="Replay since (UTC)"
          type="datetime-local"
          value={since}
          onInput={setSince}
        />
        <button type="submit">Replay</button>
        <button type="button" class="secondary" onClick={() => list.reload()}>
          Refresh
        </button>
      </form>
      {note && <p role="status">{note}</p>}
      {list.error && <ErrorNotice error={list.error} what="deliveries" />}
      {list.data && (
        <TableWrap label="Deliveries">
          <table data-testid="deliveries">
            <TableHead columns={['When', 'Event', 'Delivery', 'Status code', 'Duration', 'Error']} />
            <tbody>
              {list.data.data.map((d) => {
                // The last attempt tells how the delivery stands; none yet while it waits.
                const last = d.attempts[d.attempts.length - 1];
                return (
                  <tr key={d.id} data-id={d.id}>
                    <td>{formatDate(last?.startedAt ?? d.createdAt)}</td>
                    <td>{d.eventType}</td>
                    <td>
                      {d.status}
                      {d.attempts.length > 1 ? ` (${d.attempts.length} attempts)` : ''}
                      {d.replayId ? ' · replay' : ''}
                    </td>
                    <td>{d.lastStatusCode ?? '—'}</td>
                    <td>{last === undefined ? '—' : `${last.durationMs} ms`}</td>
                    <td>{d.lastError ?? ''}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </TableWrap>
      )}
      {list.data?.data.length === 0 && (
        <p class="muted">
          No delivery yet: events of mail sent from now on are delivered here (or replay past ones).
        </p>
      )}
      {pager && <Pager {...pager} />}
    </div>
  );
}
