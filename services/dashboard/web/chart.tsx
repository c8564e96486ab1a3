import { useEffect, useMemo, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { type Column, FiguresTable, type FiguresTableProps, num } from './kit/figures-table.js';

const DAY_S = 86_400;

/** One line of a daily chart; its swatch colour is `.swatch[data-color="<key>"]` in the stylesheet. */
export interface Series<K extends string> {
  key: K;
  label: string;
  color: string;
}

/** The lines of the overview (SPEC §6 daily buckets). */
export const ANALYTICS_SERIES = [
  { key: 'sent', label: 'Sent', color: '#0b4f6c' },
  { key: 'opened', label: 'Opened', color: '#1a7f37' },
  { key: 'clicked', label: 'Clicked', color: '#8250df' },
  { key: 'bounced', label: 'Bounced', color: '#cf222e' },
] as const;

/** A line as drawn: its label, its colour, its swatch (`.swatch[data-color]`), a value per x. */
interface Line {
  label: string;
  color: string;
  swatch: string;
  values: readonly number[];
}

interface LineChartProps<R> {
  /** The x of each value, in seconds since the epoch. */
  xs: readonly number[];
  lines: readonly Line[];
  /** The zone the axes read in. */
  timeZone: string;
  xAxis: uPlot.Axis;
  /** The canvas's text alternative. */
  label: string;
  testId?: string;
  /** The table's summary, its region's name, its test id, and the table itself. */
  summary: string;
  table: FiguresTableProps<R>;
}

/** uPlot lines that follow their box's width, their legend, and their figures as a table. */
function LineChart<R>({ xs, lines, timeZone, xAxis, label, testId, summary, table }: LineChartProps<R>) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const data: uPlot.AlignedData = [[...xs], ...lines.map((l) => [...l.values])];
    const size = () => ({ width: Math.max(el.clientWidth, 240), height: el.clientWidth < 500 ? 200 : 260 });
    const plot = new uPlot(
      {
        ...size(),
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), timeZone),
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(max, 1)] } },
        axes: [xAxis, { stroke: '#444' }],
        series: [
          {},
          ...lines.map((l) => ({ label: l.label, stroke: l.color, width: 2, points: { show: false } })),
        ],
      },
      data,
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize(size()));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [xs, lines, timeZone, xAxis]);
  return (
    <figure class="chart">
      <div ref={box} role="img" data-testid={testId} aria-label={label} />
      <figcaption>
        <ul class="legend">
          {lines.map((l) => (
            <li key={l.label}>
              <span class="swatch" data-color={l.swatch} aria-hidden="true" /> {l.label}
            </li>
          ))}
        </ul>
        <details>
          <summary>{summary}</summary>
          <FiguresTable {...table} />
        </details>
      </figcaption>
    </figure>
  );
}

const DAY_AXIS: uPlot.Axis = {
  stroke: '#444',
  // Whole days only (the buckets are UTC days), labelled MM-DD.
  incrs: [DAY_S, 2 * DAY_S, 7 * DAY_S, 14 * DAY_S, 28 * DAY_S],
  values: (_u, splits) => splits.map((s) => new Date(s * 1000).toISOString().slice(5, 10)),
};

/**
 * uPlot lines of figures per UTC day. The canvas has a text alternative (`role="img"` with the
 * totals) and the figures are also a table under "Daily figures as a table".
 */
export function DailyChart<K extends string>({
  daily,
  series,
  label = 'Daily emails',
}: {
  daily: readonly ({ date: string } & Record<K, number>)[];
  series: readonly Series<K>[];
  label?: string;
}) {
  type Day = (typeof daily)[number];
  const xs = useMemo(() => daily.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000), [daily]);
  const lines = useMemo(
    () =>
      series.map((s) => ({
        label: s.label,
        color: s.color,
        swatch: s.key,
        values: daily.map((d) => d[s.key]),
      })),
    [daily, series],
  );
  const sum = (k: K) => daily.reduce((n, d) => n + d[k], 0);
  return (
    <LineChart
      xs={xs}
      lines={lines}
      timeZone="Etc/UTC"
      xAxis={DAY_AXIS}
      label={`${label} over ${daily.length} days: ${series.map((s) => `${sum(s.key)} ${s.label.toLowerCase()}`).join(', ')}.`}
      summary="Daily figures as a table"
      table={{
        label: 'Daily figures',
        testId: 'daily-table',
        columns: [
          { label: 'Day (UTC)', cell: (d: Day) => d.date },
          ...series.map((s) => num<Day>(s.label, (d) => d[s.key])),
        ],
        rows: [...daily],
        rowKey: (d) => d.date,
      }}
    />
  );
}

/** The line colours of a breakdown chart, in row order (AA against white); `.swatch[data-color="p<i>"]`. */
export const PALETTE = [
  '#0b4f6c',
  '#1a7f37',
  '#8250df',
  '#cf222e',
  '#9a6700',
  '#bf3989',
  '#0550ae',
  '#57606a',
];

/** One line of a breakdown chart: a row's key and its figure at each start. */
export interface KeyedSeries {
  label: string;
  values: readonly number[];
}

/**
 * uPlot lines, one per breakdown row (SPEC §26 `interval=hour|day`), over the local hours or days
 * of the tenant's time zone (`starts` are the UTC instants they begin; axes read in `timeZone`).
 * The canvas has a text alternative with each line's sum; the figures are a table too.
 */
export function SeriesChart({
  starts,
  lines,
  timeZone,
  interval,
  label,
}: {
  starts: readonly string[];
  lines: readonly KeyedSeries[];
  timeZone: string;
  interval: 'hour' | 'day';
  label: string;
}) {
  const xs = useMemo(() => starts.map((s) => Date.parse(s) / 1000), [starts]);
  const drawn = useMemo(
    () =>
      lines.map((l, i) => ({
        label: l.label,
        color: PALETTE[i % PALETTE.length]!,
        swatch: `p${i % PALETTE.length}`,
        values: l.values,
      })),
    [lines],
  );
  const sum = (l: KeyedSeries) => l.values.reduce((n, v) => n + v, 0);
  const unit = interval === 'day' ? 'days' : 'hours';
  return (
    <LineChart
      xs={xs}
      lines={drawn}
      timeZone={timeZone}
      xAxis={interval === 'day' ? SERIES_DAY_AXIS : SERIES_HOUR_AXIS}
      testId="breakdown-chart"
      label={`${label} over ${starts.length} ${unit}: ${lines.map((l) => `${l.label} ${sum(l)}`).join(', ')}.`}
      summary="Chart figures as a table"
      table={{
        label: 'Chart figures',
        testId: 'series-table',
        columns: [
          {
            label: `${interval === 'day' ? 'Day' : 'Hour'} (${timeZone})`,
            cell: (s: string) => localTime(s, timeZone, interval),
          },
          ...lines.map((l): Column<string> => ({ label: l.label, num: true, cell: (_, i) => l.values[i] })),
        ],
        rows: [...starts],
        rowKey: (s) => s,
      }}
    />
  );
}

const SERIES_DAY_AXIS: uPlot.Axis = {
  stroke: '#444',
  incrs: [DAY_S, 2 * DAY_S, 7 * DAY_S, 14 * DAY_S, 28 * DAY_S],
};
const SERIES_HOUR_AXIS: uPlot.Axis = { stroke: '#444' };

/** `2026-06-15` (a day) or `2026-06-15 14:00` (an hour) of an instant, in `timeZone`. */
export function localTime(iso: string, timeZone: string, interval: 'hour' | 'day'): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
      .formatToParts(new Date(iso))
      .map((p) => [p.type, p.value]),
  );
  const day = `${parts.year}-${parts.month}-${parts.day}`;
  return interval === 'day' ? day : `${day} ${parts.hour}:${parts.minute}`;
}
