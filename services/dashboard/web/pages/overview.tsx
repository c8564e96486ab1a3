import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { get, query } from '../api.js';
import type { DailyBucket, Summary, TopTemplate } from '../types.js';
import { ErrorNotice, formatDate, formatNumber, Loading, Page, TableWrap, useLoad } from '../ui.js';

const PERIODS = [7, 30, 90] as const;
const SERIES = [
  { key: 'sent', label: 'Sent', color: '#0b4f6c' },
  { key: 'opened', label: 'Opened', color: '#1a7f37' },
  { key: 'clicked', label: 'Clicked', color: '#8250df' },
  { key: 'bounced', label: 'Bounced', color: '#cf222e' },
] as const;

interface Overview {
  summary: Summary;
  daily: DailyBucket[];
  top: TopTemplate[];
  asOf: string | null;
}

async function loadOverview(days: number): Promise<Overview> {
  const q = query({ days });
  const [summary, daily, top] = await Promise.all([
    get<Summary>(`/analytics/summary${q}`),
    get<{ daily: DailyBucket[] }>(`/analytics/daily${q}`),
    get<{ top: TopTemplate[] }>(`/analytics/top-templates${q}`),
  ]);
  return { summary: summary.body, daily: daily.body.daily, top: top.body.top, asOf: summary.asOf };
}

function Card({ id, label, value, rate }: { id: string; label: string; value: number; rate?: number }) {
  return (
    <div class="card" data-testid={`card-${id}`}>
      <dt>{label}</dt>
      <dd>
        <span class="figure" data-testid={`total-${id}`}>
          {formatNumber(value)}
        </span>
        {rate !== undefined && (
          <span class="rate" data-testid={`rate-${id}`}>
            {rate.toFixed(1)}%
          </span>
        )}
      </dd>
    </div>
  );
}

function DailyChart({ daily }: { daily: DailyBucket[] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = daily.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
    const data: uPlot.AlignedData = [xs, ...SERIES.map((s) => daily.map((d) => d[s.key]))];
    const size = () => ({ width: Math.max(el.clientWidth, 240), height: el.clientWidth < 500 ? 200 : 260 });
    const plot = new uPlot(
      {
        ...size(),
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(max, 1)] } },
        axes: [{ stroke: '#444' }, { stroke: '#444' }],
        series: [
          {},
          ...SERIES.map((s) => ({ label: s.label, stroke: s.color, width: 2, points: { show: false } })),
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
  }, [daily]);
  const sum = (k: (typeof SERIES)[number]['key']) => daily.reduce((n, d) => n + d[k], 0);
  return (
    <figure class="chart">
      <div
        ref={box}
        role="img"
        aria-label={`Daily emails over ${daily.length} days: ${SERIES.map((s) => `${sum(s.key)} ${s.label.toLowerCase()}`).join(', ')}.`}
      />
      <figcaption>
        <ul class="legend">
          {SERIES.map((s) => (
            <li key={s.key}>
              <span class="swatch" data-color={s.key} aria-hidden="true" /> {s.label}
            </li>
          ))}
        </ul>
        <details>
          <summary>Daily figures as a table</summary>
          <TableWrap label="Daily figures">
            <table>
              <thead>
                <tr>
                  <th scope="col">Day (UTC)</th>
                  {SERIES.map((s) => (
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
                    {SERIES.map((s) => (
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

export function OverviewPage() {
  const [days, setDays] = useState<number>(30);
  const { data, error, loading } = useLoad(() => loadOverview(days), [days]);

  return (
    <Page
      title="Overview"
      actions={
        <fieldset class="segmented">
          <legend class="sr-only">Period</legend>
          {PERIODS.map((p) => (
            <button key={p} type="button" aria-pressed={days === p} onClick={() => setDays(p)}>
              {p} days
            </button>
          ))}
        </fieldset>
      }
    >
      {error && <ErrorNotice error={error} what="analytics" />}
      {!data && loading && <Loading />}
      {data && (
        <div aria-busy={loading} data-testid="overview" data-days={data.summary.period.days}>
          <p class="muted" data-testid="as-of">
            {formatDate(data.summary.period.since).slice(0, 10)} to now ·{' '}
            {data.asOf ? `as of ${formatDate(data.asOf)}` : 'no event projected yet'}
          </p>
          <dl class="cards">
            <Card id="total" label="Emails" value={data.summary.totals.total} />
            <Card id="sent" label="Sent" value={data.summary.totals.sent} />
            <Card
              id="opened"
              label="Opened"
              value={data.summary.totals.opened}
              rate={data.summary.rates.openRate}
            />
            <Card
              id="clicked"
              label="Clicked"
              value={data.summary.totals.clicked}
              rate={data.summary.rates.clickRate}
            />
            <Card
              id="bounced"
              label="Bounced"
              value={data.summary.totals.bounced}
              rate={data.summary.rates.bounceRate}
            />
            <Card
              id="complained"
              label="Complaints"
              value={data.summary.totals.complained}
              rate={data.summary.rates.complaintRate}
            />
            <Card id="failed" label="Failed" value={data.summary.totals.failed} />
          </dl>
          <h2>Daily</h2>
          <DailyChart daily={data.daily} />
          <h2>Top templates</h2>
          {data.top.length === 0 ? (
            <p class="muted">No template was used in this period.</p>
          ) : (
            <TableWrap label="Top templates">
              <table data-testid="top-templates">
                <thead>
                  <tr>
                    <th scope="col">Template</th>
                    <th scope="col">Subject</th>
                    <th scope="col" class="num">
                      Sent
                    </th>
                    <th scope="col" class="num">
                      Opened
                    </th>
                    <th scope="col" class="num">
                      Clicked
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.top.map((t) => (
                    <tr key={t.id}>
                      <th scope="row">{t.name}</th>
                      <td>{t.subject}</td>
                      <td class="num">{t.sent}</td>
                      <td class="num">{t.opened}</td>
                      <td class="num">{t.clicked}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
        </div>
      )}
    </Page>
  );
}
