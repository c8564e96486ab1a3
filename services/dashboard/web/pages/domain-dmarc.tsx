import { useState } from 'preact/hooks';
import { get, query } from '../api.js';
import { type Column, FiguresTable, num } from '../kit/figures-table.js';
import { routeHref } from '../router.js';
import { EmptyState } from '../table.js';
import type { DmarcSummary } from '../types.js';
import { ErrorNotice, FigureCard, formatDate, formatNumber, Loading, PeriodSwitch, useLoad } from '../ui.js';

type Source = DmarcSummary['sources'][number];
const SOURCE_COLUMNS: Column<Source>[] = [
  { label: 'Source IP', cell: (s) => <code>{s.sourceIp}</code> },
  num('Messages', (s) => formatNumber(s.count)),
  num('DKIM aligned', (s) => formatNumber(s.dkim.pass)),
  num('DKIM failed', (s) => formatNumber(s.dkim.fail)),
  num('SPF aligned', (s) => formatNumber(s.spf.pass)),
  num('SPF failed', (s) => formatNumber(s.spf.fail)),
  num('Quarantined', (s) => formatNumber(s.disposition.quarantine)),
  num('Rejected', (s) => formatNumber(s.disposition.reject)),
  { label: 'Reported by', cell: (s) => s.reporters.join(', ') },
  { label: 'Last seen', cell: (s) => <time dateTime={s.lastSeen}>{formatDate(s.lastSeen)}</time> },
];

/**
 * The DMARC tab of a domain (SPEC §26 `GET /domains/:id/dmarc`): what receivers' aggregate reports
 * said of the mail sent as the domain, by sending source IP — volumes, the DMARC-aligned DKIM and
 * SPF results, the receivers' dispositions, who reported.
 */
export function DmarcReports({ domain }: { domain: { id: string; name: string } }) {
  const [days, setDays] = useState(30);
  const { data, error, loading } = useLoad(
    () =>
      get<DmarcSummary>(`/domains/${encodeURIComponent(domain.id)}/dmarc${query({ days })}`).then(
        (r) => r.body,
      ),
    [domain.id, days],
  );
  return (
    <section class="panel" aria-labelledby="dmarc-title" data-testid="domain-dmarc">
      <header class="page-head">
        <h2 id="dmarc-title">DMARC reports for {domain.name}</h2>
        <PeriodSwitch days={days} onChange={setDays} />
      </header>
      {error && <ErrorNotice error={error} what="DMARC reports" />}
      {!data && loading && <Loading />}
      {data && (
        <div aria-busy={loading}>
          <dl class="cards">
            <FigureCard label="Reports" value={data.reports} figureId="dmarc-reports" />
            <FigureCard label="Messages reported" value={data.messages} figureId="dmarc-messages" />
            <FigureCard label="Reports refused" value={data.rejected} figureId="dmarc-rejected" />
          </dl>
          {data.sources.length === 0 ? (
            <EmptyState title={`No DMARC report for ${domain.name} in the last ${days} days.`}>
              <p>
                Receivers send aggregate reports to the address in your DMARC record’s <code>rua=</code>:
                point it at one of your <a href={routeHref('/inbound')}>receiving addresses</a> and Tern reads
                them.
              </p>
            </EmptyState>
          ) : (
            <FiguresTable
              label={`DMARC sources of ${domain.name}`}
              testId="dmarc-sources"
              columns={SOURCE_COLUMNS}
              rows={data.sources}
              rowKey={(s) => s.sourceIp}
              rowAttrs={(s) => ({ 'data-ip': s.sourceIp })}
            />
          )}
        </div>
      )}
    </section>
  );
}
