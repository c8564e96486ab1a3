import { useEffect, useState } from 'preact/hooks';
import { get, query } from '../api.js';
import { Field, Options } from '../kit/form.js';
import { useProject } from '../project.js';
import { navigate, type Route, routeHref } from '../router.js';
import { EmptyState, Pager, TableHead, TableWrap } from '../table.js';
import { type List, type LogEntry, type LogsMeta, STATUSES } from '../types.js';
import { ErrorNotice, formatDate, formatNumber, Loading, Page, StatusBadge, useLoad } from '../ui.js';

const LIMIT = 20;

/** The filters of the address (`#/logs?status=BOUNCED&q=ada%40&tag=receipt&from=2026-06-01&to=…`). */
interface LogFilters {
  status: string;
  /** A template id (the API's `templateId`). */
  template: string;
  q: string;
  tag: string;
  /** UTC days, YYYY-MM-DD, inclusive. */
  from: string;
  to: string;
}
const FILTER_KEYS = ['status', 'template', 'q', 'tag', 'from', 'to'] as const;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** The API's `from`/`to` (SPEC §19, ISO instants on `createdAt`) of the page's UTC days. */
function apiBounds(f: LogFilters): { from?: string; to?: string } {
  return {
    ...(DAY.test(f.from) ? { from: `${f.from}T00:00:00.000Z` } : {}),
    ...(DAY.test(f.to) ? { to: `${f.to}T23:59:59.999Z` } : {}),
  };
}

/**
 * The delivery log (SPEC §7), newest first. Every filter is one of SPEC §19's parameters, applied
 * by the API — `status`, `templateId`, `q` (recipient, exact or prefix), `tag`, `from`/`to` (whole
 * UTC days on `createdAt`) and the project switcher's `projectId` — so the rows, the total and the pages are
 * those of the filter. "Older" follows `meta.nextCursor` (the next page at constant cost however
 * deep); "Newer" and a typed page number ask for the page by number.
 */
export function LogsPage({ route }: { route: Route }) {
  // Page, cursor and filters live in the address: Back from an email returns to the same page, and
  // a view can be bookmarked or shared.
  const page = positive(route.params.get('page'));
  const cursor = route.params.get('cursor') ?? '';
  const filters = Object.fromEntries(
    FILTER_KEYS.map((k) => [k, route.params.get(k) ?? '']),
  ) as unknown as LogFilters;
  const { status } = filters;
  const project = useProject();
  const go = (next: { page?: number; cursor?: string } & Partial<LogFilters>) =>
    navigate(
      `/logs${query({
        ...(next.cursor ? { cursor: next.cursor } : { page: next.page ?? page }),
        ...Object.fromEntries(FILTER_KEYS.map((k) => [k, next[k] ?? filters[k]])),
      })}`,
    );
  const key = JSON.stringify(filters);
  const { data, error, loading } = useLoad(
    () =>
      get<List<LogEntry> & { meta: LogsMeta }>(
        `/emails/logs${query({
          ...(cursor ? { cursor } : { page }),
          limit: LIMIT,
          status,
          templateId: filters.template,
          q: filters.q,
          tag: filters.tag,
          ...apiBounds(filters),
          projectId: project.id,
        })}`,
      ).then((r) => r.body),
    [page, cursor, key, project.id],
  );
  // The template menu names the tenant's templates; an id of the address that is not among them
  // (a deleted template, or one past the first 100) stays a choice of its own.
  const templates = useLoad(
    () =>
      get<List<{ id: string; name: string }>>(`/templates${query({ limit: 100 })}`).then(
        (r) => r.body.data,
        () => [],
      ),
    [],
  );
  const templateChoices = [...(templates.data ?? [])];
  if (filters.template !== '' && !templateChoices.some((t) => t.id === filters.template))
    templateChoices.push({ id: filters.template, name: filters.template });
  const filtered = FILTER_KEYS.some((k) => filters[k] !== '') || project.id !== undefined;
  // The typed filters apply together on "Apply" (a request per keystroke would page the log for nothing).
  const [draft, setDraft] = useState({ q: filters.q, tag: filters.tag, from: filters.from, to: filters.to });
  useEffect(
    () => setDraft({ q: filters.q, tag: filters.tag, from: filters.from, to: filters.to }),
    [filters.q, filters.tag, filters.from, filters.to],
  );
  const apply = (e: Event) => {
    e.preventDefault();
    go({ page: 1, q: draft.q.trim(), tag: draft.tag.trim(), from: draft.from, to: draft.to });
  };

  return (
    <Page title="Logs">
      <form class="filters" aria-label="Log filters" onSubmit={apply}>
        <Field
          id="log-q"
          label="Recipient"
          type="search"
          autoComplete="off"
          spellcheck={false}
          placeholder="ada@ or ada@example.com"
          value={draft.q}
          onInput={(q) => setDraft({ ...draft, q })}
        />
        <Field
          id="log-tag"
          label="Tag"
          autoComplete="off"
          spellcheck={false}
          value={draft.tag}
          onInput={(tag) => setDraft({ ...draft, tag })}
        />
        <label for="log-from">From (UTC)</label>
        <input
          id="log-from"
          type="date"
          value={draft.from}
          onChange={(e) => setDraft({ ...draft, from: e.currentTarget.value })}
        />
        <label for="log-to">To (UTC)</label>
        <input
          id="log-to"
          type="date"
          value={draft.to}
          onChange={(e) => setDraft({ ...draft, to: e.currentTarget.value })}
        />
        <button type="submit">Apply</button>
        {FILTER_KEYS.some((k) => filters[k] !== '') && (
          <button
            type="button"
            class="secondary"
            onClick={() => go({ page: 1, status: '', template: '', q: '', tag: '', from: '', to: '' })}
          >
            Clear filters
          </button>
        )}
      </form>
      <div class="filters">
        <label for="status-filter">Status</label>
        <select
          id="status-filter"
          value={status}
          onChange={(e) => go({ page: 1, status: e.currentTarget.value })}
        >
          <option value="">All</option>
          <Options items={STATUSES} />
        </select>
        <label for="template-filter">Template</label>
        <select
          id="template-filter"
          value={filters.template}
          onChange={(e) => go({ page: 1, template: e.currentTarget.value })}
        >
          <option value="">Any</option>
          <Options items={templateChoices} value={(t) => t.id} label={(t) => t.name} />
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
                    ? 'Change or clear the filters, choose another project, or send one that matches. '
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
                <TableHead
                  columns={[
                    'Recipient',
                    'Subject',
                    'Status',
                    'Tags',
                    'Opened',
                    'Clicked',
                    'Complained',
                    'Created',
                  ]}
                />
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
                      <td>{e.tags.length === 0 ? '—' : e.tags.join(', ')}</td>
                      <td>{e.opened ? 'Yes' : 'No'}</td>
                      <td>{e.clicked ? 'Yes' : 'No'}</td>
                      <td>{e.complained ? 'Yes' : 'No'}</td>
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
