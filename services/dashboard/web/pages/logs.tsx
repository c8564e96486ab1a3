import { get, query } from '../api.js';
import { useProject } from '../project.js';
import { navigate, type Route, routeHref } from '../router.js';
import { type List, type LogEntry, type LogsMeta, STATUSES } from '../types.js';
import {
  EmptyState,
  ErrorNotice,
  formatDate,
  formatNumber,
  Loading,
  Page,
  Pager,
  StatusBadge,
  TableWrap,
  useLoad,
} from '../ui.js';

const LIMIT = 20;

/**
 * The delivery log (SPEC §7), newest first. The status filter is SPEC §19's `status` parameter and
 * the project switcher its `projectId`, both applied by the API: the rows, the total and the pages
 * are those of the filter. "Older" follows `meta.nextCursor` (SPEC §19: the next page at constant
 * cost however deep); "Newer" and a typed page number ask for the page by number.
 */
export function LogsPage({ route }: { route: Route }) {
  // Page, cursor and filter live in the address (`#/logs?page=2&status=SENT`): Back from an email
  // returns to the same page, and a view can be bookmarked or shared.
  const page = positive(route.params.get('page'));
  const cursor = route.params.get('cursor') ?? '';
  const status = route.params.get('status') ?? '';
  const project = useProject();
  const go = (next: { page?: number; status?: string; cursor?: string }) =>
    navigate(
      `/logs${query({
        ...(next.cursor ? { cursor: next.cursor } : { page: next.page ?? page }),
        status: next.status ?? status,
      })}`,
    );
  const { data, error, loading } = useLoad(
    () =>
      get<List<LogEntry> & { meta: LogsMeta }>(
        `/emails/logs${query({ ...(cursor ? { cursor } : { page }), limit: LIMIT, status, projectId: project.id })}`,
      ).then((r) => r.body),
    [page, cursor, status, project.id],
  );
  const filtered = status !== '' || project.id !== undefined;

  return (
    <Page title="Logs">
      <div class="filters">
        <label for="status-filter">Status</label>
        <select
          id="status-filter"
          value={status}
          onChange={(e) => go({ page: 1, status: e.currentTarget.value })}
        >
          <option value="">All</option>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        {data && (
          <span class="muted" data-testid="logs-total">
            {formatNumber(data.meta.total)} emails
            {project.id !== undefined && ` in project “${project.name}”`}
          </span>
        )}
      </div>
      {error && <ErrorNotice error={error} what="the delivery log" />}
      {!data && loading && <Loading />}
      {data && (
        <>
          {data.data.length === 0 ? (
            data.meta.total === 0 ? (
              <EmptyState title={filtered ? 'No email matches this view.' : 'No email yet.'}>
                <p>
                  {filtered
                    ? 'Choose another status or project, or send one that matches. '
                    : 'Every email Tern sends or is told about appears here. '}
                  Send one from the <a href={routeHref('/send')}>Send</a> page, or call{' '}
                  <code>POST /emails/send</code> with an <a href={routeHref('/api-keys')}>API key</a>.
                </p>
              </EmptyState>
            ) : (
              <p class="muted">No email on this page.</p>
            )
          ) : (
            <TableWrap label="Emails">
              <table data-testid="logs" aria-busy={loading}>
                <thead>
                  <tr>
                    <th scope="col">Recipient</th>
                    <th scope="col">Subject</th>
                    <th scope="col">Status</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {data.data.map((e) => (
                    <tr key={e.id} data-id={e.id}>
                      <th scope="row">
                        <a href={routeHref(`/emails/${encodeURIComponent(e.id)}`)}>
                          {e.toEmail ?? '(erased)'}
                        </a>
                      </th>
                      <td>{e.subject ?? '—'}</td>
                      <td>
                        <StatusBadge status={e.status} />
                      </td>
                      <td>
                        <time dateTime={e.createdAt}>{formatDate(e.createdAt)}</time>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
          <Pager
            page={data.meta.page}
            totalPages={data.meta.totalPages}
            onPage={(p) => go({ page: p })}
            onNext={data.meta.nextCursor ? () => go({ cursor: data.meta.nextCursor ?? '' }) : undefined}
            label="Log pages"
          />
        </>
      )}
    </Page>
  );
}

function positive(raw: string | null): number {
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 1 ? n : 1;
}
