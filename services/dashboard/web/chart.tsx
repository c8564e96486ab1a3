import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { TableWrap } from './ui.js';

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
