import { useState } from 'preact/hooks';
import { download, get, query } from '../api.js';
import { TenantWide } from '../project.js';
import { routeHref } from '../router.js';
import { EmptyState, ListTable, listOf } from '../table.js';
import type { InboundAuth, InboundList, InboundMessage } from '../types.js';
import {
  Alert,
  ErrorNotice,
  formatDate,
  formatNumber,
  HtmlPreview,
  Loading,
  Page,
  useActionError,
  useLoad,
} from '../ui.js';
import { InboundRoutes } from './inbound-routes.js';

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
        {...listOf(list)}
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
      <InboundRoutes />
    </Page>
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
