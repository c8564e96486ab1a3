import { useMemo, useState } from 'preact/hooks';
import { get, query } from './api.js';
import { SeriesChart } from './chart.js';
import { type Column, FiguresTable, num, percent } from './kit/figures-table.js';
import { Field, Options } from './kit/form.js';
import { type Route, setParams } from './router.js';
import type { Breakdown, BreakdownCounters, Dimension } from './types.js';
import { ErrorNotice, formatNumber, Loading, OUTCOME_LABELS, useLoad } from './ui.js';

/** How each dimension is named on screen (SPEC §26). */
export const DIMENSION_LABELS: Record<Dimension, string> = {
  tag: 'Tag',
  template: 'Template',
  project: 'Project',
  campaign: 'Campaign',
  domain: 'Sending domain',
  provider: 'Mailbox provider',
  client: 'Client',
  device: 'Device',
  bounce: 'Bounce category',
};
/** SPEC §26: the dimensions of `GET /analytics/breakdown` (`by=`, each one a filter), as labelled. */
const DIMENSIONS = Object.keys(DIMENSION_LABELS) as Dimension[];

/** The figures a chart can draw, one line per row. */
const FIGURES = [['total', 'Emails'], ...OUTCOME_LABELS] as const satisfies readonly (readonly [
  keyof BreakdownCounters,
  string,
])[];
type Figure = (typeof FIGURES)[number][0];

const TOP_N = [3, 5, 8] as const;

/** The address parameter of a breakdown filter on a dimension: `f.tag=receipt`. */
const FILTER_PREFIX = 'f.';

const oneOf = <T extends string>(value: string | null, allowed: readonly T[], fallback: T): T =>
  allowed.includes(value as T) ? (value as T) : fallback;

/** The breakdown's choices read from the address; what is missing or unknown there is the default. */
export function breakdownChoices(params: URLSearchParams) {
  const figures = FIGURES.map(([k]) => k);
  const top = Number(params.get('top'));
  return {
    by: oneOf<Dimension>(params.get('by'), DIMENSIONS, 'provider'),
    interval: oneOf(params.get('interval'), ['day', 'hour'] as const, 'day'),
    from: params.get('from') ?? '',
    to: params.get('to') ?? '',
    filters: DIMENSIONS.flatMap((d): [Dimension, string][] => {
      const v = params.get(`${FILTER_PREFIX}${d}`);
      return v === null ? [] : [[d, v]];
    }),
    figure: oneOf<Figure>(params.get('figure'), figures, 'total'),
    topN: (TOP_N as readonly number[]).includes(top) ? top : 5,
  };
}

/** A row's key as shown: '' is the emails without a value of the dimension. */
export const keyLabel = (key: string) => (key === '' ? '(none)' : key);

type Row = Breakdown['data'][number];

/** The breakdown table's columns: the dimension's values, the counts, the rates. */
const breakdownColumns = (dimension: string): Column<Row>[] => [
  { label: dimension, cell: (r) => keyLabel(r.key) },
  num('Emails', (r) => formatNumber(r.total)),
  ...OUTCOME_LABELS.map(([k, label]) => num<Row>(label, (r) => formatNumber(r[k]))),
  num('Delivery rate', (r) => percent(r.rates.deliveryRate)),
  num('Open rate', (r) => percent(r.rates.openRate)),
  num('Click rate', (r) => percent(r.rates.clickRate)),
  num('Bounce rate', (r) => percent(r.rates.bounceRate)),
  num('Complaint rate', (r) => percent(r.rates.complaintRate)),
];

/**
 * The overview's breakdown (SPEC §26 `GET /analytics/breakdown`): rows of one dimension over the
 * overview's period (or a from/to of local days), narrowed by filters on other dimensions (and by
 * the project switcher), with a line per top row by local hour or day.
 */
export function BreakdownSection({
  days,
  projectId,
  route,
}: {
  days: number;
  projectId: string | undefined;
  route: Route;
}) {
  // The choices live in the address (`#/?by=client&interval=hour&f.tag=receipt&figure=opened`): a
  // bookmarked or shared overview shows the same breakdown. Only the filter being typed is local.
  const { by, interval, from, to, filters, figure, topN } = breakdownChoices(route.params);
  const set = (changes: Record<string, string | undefined>) => setParams(route, changes);
  const setBy = (d: Dimension) => set({ by: d });
  const setInterval = (i: 'day' | 'hour') => set({ interval: i });
  const setFrom = (d: string) => set({ from: d });
  const setTo = (d: string) => set({ to: d });
  const setFigure = (f: Figure) => set({ figure: f });
  const setTopN = (n: number) => set({ top: String(n) });
  const [filterBy, setFilterBy] = useState<Dimension>('tag');
  const [filterValue, setFilterValue] = useState('');
  const range = from !== '' && to !== '' ? { from, to } : { days };
  const params = {
    by,
    interval,
    ...range,
    ...Object.fromEntries(filters),
    // The project switcher narrows the breakdown as it narrows every page.
    ...(projectId !== undefined ? { project: projectId } : {}),
  };
  const q = query(params);
  const load = useLoad(() => get<Breakdown>(`/analytics/breakdown${q}`).then((r) => r.body), [q]);
  const data = load.data;
  const lines = useMemo(
    () =>
      (data?.data ?? []).slice(0, topN).map((row) => ({
        label: keyLabel(row.key),
        values: (row.series ?? []).map((p) => p[figure]),
      })),
    [data, topN, figure],
  );
  const starts = useMemo(() => data?.data[0]?.series?.map((p) => p.start) ?? [], [data]);

  const addFilter = (e: Event) => {
    e.preventDefault();
    // A filter of no value stays in the address as `f.<dim>=` ('' is the emails without one).
    const params = new URLSearchParams(route.params);
    params.set(`${FILTER_PREFIX}${filterBy}`, filterValue.trim());
    setFilterValue('');
    window.location.hash = `${route.path}?${params.toString()}`;
  };

  return (
    <section aria-labelledby="breakdown-title" data-testid="breakdown">
      <h2 id="breakdown-title">Breakdown</h2>
      <div class="filters">
        <label for="breakdown-by">Breakdown by</label>
        <select id="breakdown-by" value={by} onChange={(e) => setBy(e.currentTarget.value as Dimension)}>
          <Options items={DIMENSIONS} label={(d) => DIMENSION_LABELS[d]} />
        </select>
        <label for="breakdown-interval">Interval</label>
        <select
          id="breakdown-interval"
          value={interval}
          onChange={(e) => setInterval(e.currentTarget.value as 'day' | 'hour')}
        >
          <option value="day">Day</option>
          <option value="hour">Hour</option>
        </select>
        <label for="breakdown-from">From</label>
        <input
          id="breakdown-from"
          type="date"
          value={from}
          onChange={(e) => setFrom(e.currentTarget.value)}
        />
        <label for="breakdown-to">To</label>
        <input id="breakdown-to" type="date" value={to} onChange={(e) => setTo(e.currentTarget.value)} />
        {(from !== '' || to !== '') && (
          <button type="button" class="secondary" onClick={() => set({ from: undefined, to: undefined })}>
            Clear dates
          </button>
        )}
      </div>
      <form class="filters" aria-label="Breakdown filters" onSubmit={addFilter}>
        <label for="breakdown-filter-by">Filter by</label>
        <select
          id="breakdown-filter-by"
          value={filterBy}
          onChange={(e) => setFilterBy(e.currentTarget.value as Dimension)}
        >
          <Options items={DIMENSIONS} label={(d) => DIMENSION_LABELS[d]} />
        </select>
        <Field
          id="breakdown-filter-value"
          label="Filter value"
          autoComplete="off"
          spellcheck={false}
          placeholder="gmail, receipt, …"
          value={filterValue}
          onInput={setFilterValue}
        />
        <button type="submit">Add filter</button>
      </form>
      {filters.length > 0 && (
        <ul class="chips" aria-label="Filters applied">
          {filters.map(([d, v]) => (
            <li key={d}>
              <span class="badge">
                {DIMENSION_LABELS[d]} = {keyLabel(v)}
              </span>{' '}
              <button
                type="button"
                class="link"
                aria-label={`Remove filter ${DIMENSION_LABELS[d]} = ${keyLabel(v)}`}
                onClick={() => {
                  const params = new URLSearchParams(route.params);
                  params.delete(`${FILTER_PREFIX}${d}`);
                  const search = params.toString();
                  window.location.hash = `${route.path}${search ? `?${search}` : ''}`;
                }}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      {load.error && <ErrorNotice error={load.error} what="the analytics breakdown" />}
      {!data && load.loading && <Loading />}
      {data && (
        <div aria-busy={load.loading} data-by={data.by} data-interval={data.interval ?? ''}>
          <p class="muted" data-testid="breakdown-period">
            {DIMENSION_LABELS[data.by]} · {data.period.from} to {data.period.to} ({data.period.timeZone})
          </p>
          {data.data.length === 0 ? (
            <p class="muted">No email matches this breakdown.</p>
          ) : (
            <>
              <div class="filters">
                <label for="breakdown-figure">Chart figure</label>
                <select
                  id="breakdown-figure"
                  value={figure}
                  onChange={(e) => setFigure(e.currentTarget.value as Figure)}
                >
                  <Options items={FIGURES} value={([k]) => k} label={([, l]) => l} />
                </select>
                <label for="breakdown-top">Lines</label>
                <select
                  id="breakdown-top"
                  value={String(topN)}
                  onChange={(e) => setTopN(Number(e.currentTarget.value))}
                >
                  <Options items={TOP_N} label={(n) => `Top ${n}`} />
                </select>
              </div>
              <SeriesChart
                starts={starts}
                lines={lines}
                timeZone={data.period.timeZone}
                interval={data.interval ?? 'day'}
                label={`${FIGURES.find(([k]) => k === figure)?.[1]} by ${DIMENSION_LABELS[data.by].toLowerCase()}`}
              />
              <FiguresTable
                label={`Breakdown by ${DIMENSION_LABELS[data.by].toLowerCase()}`}
                testId="breakdown-table"
                columns={breakdownColumns(DIMENSION_LABELS[data.by])}
                rows={data.data}
                rowKey={(r) => r.key}
                rowAttrs={(r) => ({ 'data-key': r.key })}
              />
            </>
          )}
        </div>
      )}
    </section>
  );
}
