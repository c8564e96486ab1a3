import { useEffect, useState } from 'preact/hooks';
import { type ApiError, get, query, readStream } from '../api.js';
import { Options } from '../kit/form.js';
import { useProject } from '../project.js';
import { navigate, type Route, routeHref } from '../router.js';
import { EmptyState, TableHead, TableWrap } from '../table.js';
import { STREAM_EVENT_TYPES, type StreamEvent, type StreamPage } from '../types.js';
import { ErrorNotice, formatDate, Loading, Page, useLoad } from '../ui.js';

/** Rows read per page ("Older"), and the most the page keeps while it follows (the oldest go). */
const LIMIT = 50;
const MAX_ROWS = 500;
/** Waits before reconnecting after a cut stream: 1 s, 2 s, 4 s… at most 15 s. */
const RETRY_MS = [1000, 2000, 4000, 8000, 15_000];

type Live = 'connecting' | 'live' | 'reconnecting' | 'stopped';

/**
 * The event stream (SPEC §25), newest first as Stripe's dashboard shows its events: the newest
 * page of `GET /events?order=newest`, then `GET /events/stream` after the newest one's cursor, so
 * every event appended meanwhile arrives on top exactly once, without a reload. A cut stream
 * reconnects with `Last-Event-ID` (nothing missed, nothing twice). The type filter (`?type=` in the
 * address) and the project are the API's `types` and `project`: the list and the tail are theirs.
 */
export function EventsPage({ route }: { route: Route }) {
  const type = route.params.get('type') ?? '';
  const project = useProject();
  const filters = { types: type, project: project.id };
  const first = useLoad(
    () =>
      get<StreamPage>(`/events${query({ order: 'newest', limit: LIMIT, ...filters })}`).then((r) => r.body),
    [type, project.id],
  );
  const [live, setLive] = useState<StreamEvent[]>([]);
  const [older, setOlder] = useState<{ rows: StreamEvent[]; next: string; hasMore: boolean } | undefined>();
  const [olderError, setOlderError] = useState<ApiError | undefined>();
  const [state, setState] = useState<Live>('connecting');
  const [streamError, setStreamError] = useState<ApiError | undefined>();

  // The tail starts once the first page is in, after its newest event (or from the start of an
  // empty stream); a new filter or project starts over.
  useEffect(() => {
    setLive([]);
    setOlder(undefined);
    setOlderError(undefined);
    setStreamError(undefined);
    setState('connecting');
    const page = first.data;
    if (!page) return;
    const controller = new AbortController();
    let lastId = page.data[0]?.cursor ?? (page.hasMore ? undefined : page.next);
    let retries = 0;
    const run = async () => {
      while (!controller.signal.aborted) {
        try {
          setState(retries === 0 ? 'connecting' : 'reconnecting');
          await readStream(`/events/stream${query(filters)}`, {
            lastEventId: lastId,
            signal: controller.signal,
            onOpen: () => setState('live'),
            onMessage: (m) => {
              lastId = m.id;
              retries = 0;
              const event = JSON.parse(m.data) as StreamEvent;
              setLive((rows) => [event, ...rows].slice(0, MAX_ROWS));
            },
          });
        } catch (error) {
          const e = error as ApiError;
          // A refusal other than "too many streams" will not change by retrying.
          if (e.status >= 400 && e.status !== 429) {
            setStreamError(e);
            setState('stopped');
            return;
          }
        }
        if (controller.signal.aborted) return;
        setState('reconnecting');
        await new Promise((r) => setTimeout(r, RETRY_MS[Math.min(retries, RETRY_MS.length - 1)]));
        retries++;
      }
    };
    void run();
    return () => controller.abort();
  }, [first.data]);

  const loadOlder = async () => {
    const before = older?.next ?? first.data?.next;
    if (before === undefined) return;
    try {
      const res = await get<StreamPage>(
        `/events${query({ order: 'newest', limit: LIMIT, before, ...filters })}`,
      );
      setOlder((o) => ({
        rows: [...(o?.rows ?? []), ...res.body.data],
        next: res.body.next,
        hasMore: res.body.hasMore,
      }));
      setOlderError(undefined);
    } catch (error) {
      setOlderError(error as ApiError);
    }
  };

  const rows = first.data ? [...live, ...first.data.data, ...(older?.rows ?? [])] : [];
  const hasMore = older ? older.hasMore : (first.data?.hasMore ?? false);
  const filtered = type !== '' || project.id !== undefined;

  return (
    <Page title="Events">
      <div class="filters">
        <label for="type-filter">Type</label>
        <select
          id="type-filter"
          value={type}
          onChange={(e) => navigate(`/events${query({ type: e.currentTarget.value })}`)}
        >
          <option value="">All</option>
          <Options items={STREAM_EVENT_TYPES} />
        </select>
        <span class={`live live-${state}`} role="status" data-testid="live-state">
          {state === 'live'
            ? 'Live: new events appear on top'
            : state === 'stopped'
              ? 'Not following'
              : state === 'reconnecting'
                ? 'Reconnecting…'
                : 'Connecting…'}
        </span>
      </div>
      {first.error && <ErrorNotice error={first.error} what="the event stream" />}
      {streamError && <ErrorNotice error={streamError} what="the live event stream" />}
      {!first.data && first.loading && <Loading />}
      {first.data &&
        (rows.length === 0 ? (
          <EmptyState title={filtered ? 'No event matches this view yet.' : 'No event yet.'}>
            <p>
              Every event of your mail (queued, sent, delivered, bounced, opened…) appears here as it happens.
              Send one from the <a href={routeHref('/send')}>Send</a> page, or read the stream yourself with{' '}
              <code>GET /events/stream</code> and an <a href={routeHref('/api-keys')}>API key</a> with{' '}
              <code>events:read</code>.
            </p>
          </EmptyState>
        ) : (
          <TableWrap label="Events">
            <table data-testid="events">
              <TableHead columns={['Type', 'Email', 'Recipient', 'When', 'Cursor']} />
              <tbody>
                {rows.map((e) => {
                  const emailId = typeof e.data.emailId === 'string' ? e.data.emailId : undefined;
                  // A custom event (`POST /events/track`) names its contact's address as `email`.
                  const to =
                    typeof e.data.to === 'string'
                      ? e.data.to
                      : typeof e.data.email === 'string'
                        ? e.data.email
                        : null;
                  return (
                    <tr key={e.cursor} data-cursor={e.cursor} data-id={e.id}>
                      <th scope="row">
                        <span class={`badge badge-${e.type.split('.').at(-1)}`}>{e.type}</span>
                      </th>
                      <td>
                        {emailId ? (
                          <a href={routeHref(`/emails/${encodeURIComponent(emailId)}`)}>{emailId}</a>
                        ) : (
                          '—'
                        )}
                      </td>
                      <td>{to ?? '—'}</td>
                      <td>
                        <time dateTime={e.timestamp}>{formatDate(e.timestamp)}</time>
                      </td>
                      <td class="muted">{e.cursor}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </TableWrap>
        ))}
      {olderError && <ErrorNotice error={olderError} what="older events" />}
      {first.data && hasMore && (
        <nav class="pager" aria-label="Event pages">
          <button type="button" onClick={loadOlder}>
            Older →
          </button>
        </nav>
      )}
    </Page>
  );
}
