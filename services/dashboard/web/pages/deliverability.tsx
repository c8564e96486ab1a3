import { useState } from 'preact/hooks';
import { get, query } from '../api.js';
import { useProject } from '../project.js';
import { EmptyState, TableWrap } from '../table.js';
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

const percent = (n: number) => `${n.toFixed(1)}%`;

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
            <TableWrap label="Deliverability by mailbox provider">
              <table data-testid="deliverability-table">
                <thead>
                  <tr>
                    <th scope="col">Mailbox provider</th>
                    <th scope="col" class="num">
                      Emails
                    </th>
                    <th scope="col" class="num">
                      Sent
                    </th>
                    <th scope="col" class="num">
                      Delivered
                    </th>
                    <th scope="col" class="num">
                      Delivery rate
                    </th>
                    <th scope="col" class="num">
                      Bounce rate
                    </th>
                    <th scope="col" class="num">
                      Complaint rate
                    </th>
                    <th scope="col" class="num">
                      Deferral rate
                    </th>
                    <th scope="col" class="num">
                      Median time to delivery
                    </th>
                    <th scope="col" class="num">
                      95th percentile
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.providers.map((p) => (
                    <tr key={p.provider} data-provider={p.provider}>
                      <th scope="row">{p.provider}</th>
                      <td class="num">{formatNumber(p.total)}</td>
                      <td class="num">{formatNumber(p.sent)}</td>
                      <td class="num">{formatNumber(p.delivered)}</td>
                      <td class="num">{percent(p.deliveryRate)}</td>
                      <td class="num">{percent(p.bounceRate)}</td>
                      <td class="num">{percent(p.complaintRate)}</td>
                      <td class="num">{percent(p.deferralRate)}</td>
                      <td class="num">{formatSeconds(p.medianDeliverySeconds)}</td>
                      <td class="num">{formatSeconds(p.p95DeliverySeconds)}</td>
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
