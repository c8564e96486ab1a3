import { get, query } from '../api.js';
import { BreakdownSection } from '../breakdown.js';
import { ANALYTICS_SERIES, DailyChart } from '../chart.js';
import { type Column, FiguresTable, num } from '../kit/figures-table.js';
import { useProject } from '../project.js';
import { type Route, routeHref, setParams } from '../router.js';
import { EmptyState } from '../table.js';
import type { DailyBucket, Summary, TopTemplate } from '../types.js';
import { ErrorNotice, FigureCard, formatDate, Loading, Page, PeriodSwitch, useLoad } from '../ui.js';

const TOP_COLUMNS: Column<TopTemplate>[] = [
  { label: 'Template', cell: (t) => t.name },
  { label: 'Subject', cell: (t) => t.subject },
  num('Sent', (t) => t.sent),
  num('Opened', (t) => t.opened),
  num('Clicked', (t) => t.clicked),
];

/** The summary's cards, in order: the total (its key names the card), its label, its rate. */
const CARDS: readonly [keyof Summary['totals'], string, (keyof Summary['rates'])?][] = [
  ['total', 'Emails'],
  ['sent', 'Sent'],
  ['opened', 'Opened', 'openRate'],
  // Opens no person made (SPEC §21), kept apart from Opened and its rate.
  ['machineOpened', 'Machine opens'],
  ['clicked', 'Clicked', 'clickRate'],
  ['bounced', 'Bounced', 'bounceRate'],
  ['complained', 'Complaints', 'complaintRate'],
  ['failed', 'Failed'],
];

interface Overview {
  summary: Summary;
  daily: DailyBucket[];
  top: TopTemplate[];
  asOf: string | null;
}

async function loadOverview(days: number, projectId: string | undefined): Promise<Overview> {
  const q = query({ days, projectId });
  const [summary, daily, top] = await Promise.all([
    get<Summary>(`/analytics/summary${q}`),
    get<{ daily: DailyBucket[] }>(`/analytics/daily${q}`),
    get<{ top: TopTemplate[] }>(`/analytics/top-templates${q}`),
  ]);
  return { summary: summary.body, daily: daily.body.daily, top: top.body.top, asOf: summary.asOf };
}

function Card({ id, label, value, rate }: { id: string; label: string; value: number; rate?: number }) {
  return (
    <FigureCard label={label} value={value} figureId={`total-${id}`} cardId={`card-${id}`}>
      {rate !== undefined && (
        <span class="rate" data-testid={`rate-${id}`}>
          {rate.toFixed(1)}%
        </span>
      )}
    </FigureCard>
  );
}

const PERIODS = [7, 30, 90] as const;

export function OverviewPage({ route }: { route: Route }) {
  // The period lives in the address too (`#/?days=7`), with the breakdown's choices.
  const asked = Number(route.params.get('days'));
  const days = (PERIODS as readonly number[]).includes(asked) ? asked : 30;
  const setDays = (d: number) => setParams(route, { days: String(d) });
  const project = useProject();
  const { data, error, loading } = useLoad(() => loadOverview(days, project.id), [days, project.id]);

  return (
    <Page title="Overview" actions={<PeriodSwitch days={days} onChange={setDays} />}>
      {error && <ErrorNotice error={error} what="analytics" />}
      {!data && loading && <Loading />}
      {data && (
        <div
          aria-busy={loading}
          data-testid="overview"
          data-days={data.summary.period.days}
          data-project={project.id ?? ''}
        >
          <p class="muted" data-testid="as-of">
            {project.id !== undefined && <>Project “{project.name}” · </>}
            {formatDate(data.summary.period.since).slice(0, 10)} to now ·{' '}
            {data.asOf ? `as of ${formatDate(data.asOf)}` : 'no event projected yet'}
          </p>
          {data.summary.totals.total === 0 && (
            <EmptyState title="No email in this period yet.">
              <p>
                Send one from the <a href={routeHref('/send')}>Send</a> page, write a{' '}
                <a href={routeHref('/campaigns')}>campaign</a>, or have your program call{' '}
                <code>POST /emails/send</code> with an <a href={routeHref('/api-keys')}>API key</a>.
              </p>
            </EmptyState>
          )}
          <dl class="cards">
            {CARDS.map(([id, label, rate]) => (
              <Card
                key={id}
                id={id}
                label={label}
                value={data.summary.totals[id]}
                rate={rate && data.summary.rates[rate]}
              />
            ))}
          </dl>
          <h2>Daily</h2>
          <DailyChart daily={data.daily} series={ANALYTICS_SERIES} />
          <h2>Top templates</h2>
          {data.top.length === 0 ? (
            <p class="muted">No template was used in this period.</p>
          ) : (
            <FiguresTable
              label="Top templates"
              testId="top-templates"
              columns={TOP_COLUMNS}
              rows={data.top}
              rowKey={(t) => t.id}
            />
          )}
        </div>
      )}
      <BreakdownSection days={days} projectId={project.id} route={route} />
    </Page>
  );
}
