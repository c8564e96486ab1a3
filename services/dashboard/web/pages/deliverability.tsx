import { useState } from 'preact/hooks';
import { get, query } from '../api.js';
import { type Column, FiguresTable, num, percent } from '../kit/figures-table.js';
import { useProject } from '../project.js';
import { EmptyState } from '../table.js';
import type { Deliverability } from '../types.js';
import { ErrorNotice, formatNumber, Loading, Page, PeriodSwitch, useLoad } from '../ui.js';

/** Seconds as read at a glance: `0.8 s`, `42 s`, `3.5 min`, `2.1 h`; `—` without deliveries. */
export function formatSeconds(s: number | null): string {
  if (s === null) return '—';
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

type Row = Deliverability['providers'][number];

const COLUMNS: Column<Row>[] = [
  { label: 'Mailbox provider', cell: (p) => p.provider },
  num('Emails', (p) => formatNumber(p.total)),
  num('Sent', (p) => formatNumber(p.sent)),
  num('Delivered', (p) => formatNumber(p.delivered)),
  num('Delivery rate', (p) => percent(p.deliveryRate)),
  num('Bounce rate', (p) => percent(p.bounceRate)),
  num('Complaint rate', (p) => percent(p.complaintRate)),
  num('Deferral rate', (p) => percent(p.deferralRate)),
  num('Median time to delivery', (p) => formatSeconds(p.medianDeliverySeconds)),
  num('95th percentile', (p) => formatSeconds(p.p95DeliverySeconds)),
];

/**
 * `/deliverability` (SPEC §26 `GET /analytics/deliverability`): per recipient mailbox provider,
 * the delivery, bounce, complaint and deferral rates and the median and 95th percentile of the
 * time from sent to delivered, over 7/30/90 local days, narrowed by the project switcher.
 */
export function DeliverabilityPage() {
  const [days, setDays] = useState(30);
  const project = useProject();
  const { data, error, loading } = useLoad(
    () =>
      get<Deliverability>(`/analytics/deliverability${query({ days, project: project.id })}`).then(
        (r) => r.body,
      ),
    [days, project.id],
  );
  return (
    <Page title="Deliverability" actions={<PeriodSwitch days={days} onChange={setDays} />}>
      <p>
        How each recipient mailbox provider treats your mail: the share delivered, bounced, reported as spam
        and deferred, and how long delivery took once sent.
      </p>
      {error && <ErrorNotice error={error} what="deliverability" />}
      {!data && loading && <Loading />}
      {data && (
        <div aria-busy={loading} data-testid="deliverability" data-days={days}>
          <p class="muted" data-testid="deliverability-period">
            {project.id !== undefined && <>Project “{project.name}” · </>}
            {data.period.from} to {data.period.to} ({data.period.timeZone})
          </p>
          {data.providers.length === 0 ? (
            <EmptyState title="No email in this period yet.">
              <p>Each email counts under its recipient’s mailbox provider once it is queued.</p>
            </EmptyState>
          ) : (
            <FiguresTable
              label="Deliverability by mailbox provider"
              testId="deliverability-table"
              columns={COLUMNS}
              rows={data.providers}
              rowKey={(p) => p.provider}
              rowAttrs={(p) => ({ 'data-provider': p.provider })}
            />
          )}
        </div>
      )}
    </Page>
  );
}
