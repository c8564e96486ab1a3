import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { TableWrap } from './table.js';

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
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = daily.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
    const data: uPlot.AlignedData = [xs, ...series.map((s) => daily.map((d) => d[s.key]))];
    const size = () => ({ width: Math.max(el.clientWidth, 240), height: el.clientWidth < 500 ? 200 : 260 });
    const plot = new uPlot(
      {
        ...size(),
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(max, 1)] } },
        axes: [
          {
            stroke: '#444',
            // Whole days only (the buckets are UTC days), labelled MM-DD.
            incrs: [DAY_S, 2 * DAY_S, 7 * DAY_S, 14 * DAY_S, 28 * DAY_S],
            values: (_u, splits) => splits.map((s) => new Date(s * 1000).toISOString().slice(5, 10)),
          },
          { stroke: '#444' },
        ],
        series: [
          {},
          ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, points: { show: false } })),
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
  }, [daily, series]);
  const sum = (k: K) => daily.reduce((n, d) => n + d[k], 0);
  return (
    <figure class="chart">
      <div
        ref={box}
        role="img"
        aria-label={`${label} over ${daily.length} days: ${series.map((s) => `${sum(s.key)} ${s.label.toLowerCase()}`).join(', ')}.`}
      />
      <figcaption>
        <ul class="legend">
          {series.map((s) => (
            <li key={s.key}>
              <span class="swatch" data-color={s.key} aria-hidden="true" /> {s.label}
            </li>
          ))}
        </ul>
        <details>
          <summary>Daily figures as a table</summary>
          <TableWrap label="Daily figures">
            <table data-testid="daily-table">
              <thead>
                <tr>
                  <th scope="col">Day (UTC)</th>
                  {series.map((s) => (
                    <th scope="col" key={s.key} class="num">
                      {s.label}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {daily.map((d) => (
                  <tr key={d.date}>
                    <th scope="row">{d.date}</th>
                    {series.map((s) => (
                      <td key={s.key} class="num">
                        {d[s.key]}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        </details>
      </figcaption>
    </figure>
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
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = starts.map((s) => Date.parse(s) / 1000);
    const data: uPlot.AlignedData = [xs, ...lines.map((l) => [...l.values])];
    const size = () => ({ width: Math.max(el.clientWidth, 240), height: el.clientWidth < 500 ? 200 : 260 });
    const plot = new uPlot(
      {
        ...size(),
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), timeZone),
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(max, 1)] } },
        axes: [
          interval === 'day'
            ? { stroke: '#444', incrs: [DAY_S, 2 * DAY_S, 7 * DAY_S, 14 * DAY_S, 28 * DAY_S] }
            : { stroke: '#444' },
          { stroke: '#444' },
        ],
        series: [
          {},
          ...lines.map((l, i) => ({
            label: l.label,
            stroke: PALETTE[i % PALETTE.length],
            width: 2,
            points: { show: false },
          })),
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
  }, [starts, lines, timeZone, interval]);
  const sum = (l: KeyedSeries) => l.values.reduce((n, v) => n + v, 0);
  const unit = interval === 'day' ? 'days' : 'hours';
  return (
    <figure class="chart">
      <div
        ref={box}
        role="img"
        data-testid="breakdown-chart"
        aria-label={`${label} over ${starts.length} ${unit}: ${lines.map((l) => `${l.label} ${sum(l)}`).join(', ')}.`}
      />
      <figcaption>
        <ul class="legend">
          {lines.map((l, i) => (
            <li key={l.label}>
              <span class="swatch" data-color={`p${i % PALETTE.length}`} aria-hidden="true" /> {l.label}
            </li>
          ))}
        </ul>
        <details>
          <summary>Chart figures as a table</summary>
          <TableWrap label="Chart figures">
            <table data-testid="series-table">
              <thead>
                <tr>
                  <th scope="col">
                    {interval === 'day' ? 'Day' : 'Hour'} ({timeZone})
                  </th>
                  {lines.map((l) => (
                    <th scope="col" key={l.label} class="num">
                      {l.label}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {starts.map((s, i) => (
                  <tr key={s}>
                    <th scope="row">{localTime(s, timeZone, interval)}</th>
                    {lines.map((l) => (
                      <td key={l.label} class="num">
                        {l.values[i]}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        </details>
      </figcaption>
    </figure>
  );
}

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
