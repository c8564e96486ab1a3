import { get, query } from '../api.js';
import { navigate, type Route } from '../router.js';
import { type List, type LogEntry, STATUSES } from '../types.js';
import {
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
 * The delivery log (SPEC §7), newest first. The status filter is SPEC §19's `status` parameter;
 * a Tern that does not know it yet ignores it (unknown query parameters are ignored), and the
 * page then says so instead of pretending the rows are filtered.
 */
export function LogsPage({ route }: { route: Route }) {
  // Page and filter live in the address (`#/logs?page=2&status=SENT`): Back from an email returns
  // to the same page, and a view can be bookmarked.
  const page = positive(route.params.get('page'));
  const status = route.params.get('status') ?? '';
  const go = (next: { page?: number; status?: string }) =>
    navigate(`/logs${query({ page: next.page ?? page, status: next.status ?? status })}`);
  const setPage = (p: number) => go({ page: p });
  const { data, error, loading } = useLoad(
    () => get<List<LogEntry>>(`/emails/logs${query({ page, limit: LIMIT, status })}`).then((r) => r.body),
    [page, status],
  );
  const unfiltered = status !== '' && data?.data.some((e) => e.status !== status);

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
          </span>
        )}
      </div>
      {unfiltered && (
        <p class="notice" role="status">
          This Tern does not filter the log by status yet: all statuses are shown.
        </p>
      )}
      {error && <ErrorNotice error={error} what="the delivery log" />}
      {!data && loading && <Loading />}
      {data && (
        <>
          {data.data.length === 0 ? (
            <p class="muted">No email on this page.</p>
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
                        <a href={`#/emails/${encodeURIComponent(e.id)}`}>{e.toEmail ?? '(erased)'}</a>
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
          <Pager page={data.meta.page} totalPages={data.meta.totalPages} onPage={setPage} label="Log pages" />
        </>
      )}
    </Page>
  );
}

function positive(raw: string | null): number {
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 1 ? n : 1;
}
