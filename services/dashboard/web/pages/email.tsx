import { useEffect } from 'preact/hooks';
import { get } from '../api.js';
import { routeHref } from '../router.js';
import type { EmailContent, EmailDetail } from '../types.js';
import { ErrorNotice, formatDate, HtmlPreview, Loading, Page, StatusBadge, useLoad } from '../ui.js';

const FINAL = new Set(['DELIVERED', 'BOUNCED', 'FAILED', 'SUPPRESSED', 'CANCELLED']);

/** One email (SPEC §11 `GET /emails/:id`): its fields, its timeline, and the sandbox copy of its content. */
export function EmailPage({ id }: { id: string }) {
  const path = `/emails/${encodeURIComponent(id)}`;
  const email = useLoad(() => get<EmailDetail>(path).then((r) => r.body), [path]);
  // Only the sandbox provider keeps a copy of what it sent (SPEC §11); other mail has none to ask for.
  const sandbox = email.data?.provider === 'sandbox';
  const content = useLoad(
    () =>
      sandbox
        ? get<EmailContent>(`${path}/content`).then(
            (r) => r.body,
            () => null,
          )
        : Promise.resolve(null),
    [path, sandbox],
  );

  // Until the email reaches a final status, look again every 2 s (a send in progress): each new
  // answer schedules the next look.
  const data = email.data;
  const reload = email.reload;
  useEffect(() => {
    if (!data || FINAL.has(data.status)) return;
    const timer = setTimeout(reload, 2000);
    return () => clearTimeout(timer);
  }, [data, reload]);

  return (
    <Page title="Email" actions={<a href={routeHref('/logs')}>← Logs</a>}>
      {email.error && <ErrorNotice error={email.error} what="email details" />}
      {!email.data && email.loading && <Loading />}
      {email.data && (
        <>
          <dl class="fields">
            <dt>Id</dt>
            <dd>
              <code>{email.data.id}</code>
            </dd>
            <dt>Status</dt>
            <dd data-testid="email-status">
              <StatusBadge status={email.data.status} />
            </dd>
            <dt>To</dt>
            <dd>{email.data.toEmail ?? '(erased)'}</dd>
            {email.data.from && (
              <>
                <dt>From</dt>
                <dd>{email.data.from}</dd>
              </>
            )}
            <dt>Subject</dt>
            <dd>{email.data.subject ?? '—'}</dd>
            <dt>Created</dt>
            <dd>{formatDate(email.data.createdAt)}</dd>
            <dt>Provider</dt>
            <dd>
              {email.data.provider ?? '—'} {email.data.messageId && <code>{email.data.messageId}</code>}
            </dd>
            {email.data.tags.length > 0 && (
              <>
                <dt>Tags</dt>
                <dd>{email.data.tags.join(', ')}</dd>
              </>
            )}
          </dl>
          <h2>Timeline</h2>
          <ol class="timeline" data-testid="timeline">
            {email.data.events.map((ev, i) => (
              <li key={`${i}-${ev.type}`}>
                <time dateTime={ev.occurredAt}>{formatDate(ev.occurredAt)}</time> <strong>{ev.type}</strong>
                {Object.keys(ev.data ?? {}).length > 0 && (
                  <code class="event-data">{JSON.stringify(ev.data)}</code>
                )}
              </li>
            ))}
          </ol>
          {content.data && (
            <>
              <h2>Content (sandbox copy)</h2>
              {content.data.html ? (
                <HtmlPreview html={content.data.html} title="Email HTML" />
              ) : (
                <pre class="text-body">{content.data.text ?? ''}</pre>
              )}
            </>
          )}
        </>
      )}
    </Page>
  );
}
