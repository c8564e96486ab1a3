import { useState } from 'preact/hooks';
import { get, query } from '../api.js';
import { routeHref } from '../router.js';
import { EmptyState, TableWrap } from '../table.js';
import type { DmarcSummary } from '../types.js';
import { ErrorNotice, formatDate, formatNumber, Loading, PeriodSwitch, useLoad } from '../ui.js';

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
            <div class="card">
              <dt>Reports</dt>
              <dd>
                <span class="figure" data-testid="dmarc-reports">
                  {formatNumber(data.reports)}
                </span>
              </dd>
            </div>
            <div class="card">
              <dt>Messages reported</dt>
              <dd>
                <span class="figure" data-testid="dmarc-messages">
                  {formatNumber(data.messages)}
                </span>
              </dd>
            </div>
            <div class="card">
              <dt>Reports refused</dt>
              <dd>
                <span class="figure" data-testid="dmarc-rejected">
                  {formatNumber(data.rejected)}
                </span>
              </dd>
            </div>
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
            <TableWrap label={`DMARC sources of ${domain.name}`}>
              <table data-testid="dmarc-sources">
                <thead>
                  <tr>
                    <th scope="col">Source IP</th>
                    <th scope="col" class="num">
                      Messages
                    </th>
                    <th scope="col" class="num">
                      DKIM aligned
                    </th>
                    <th scope="col" class="num">
                      DKIM failed
                    </th>
                    <th scope="col" class="num">
                      SPF aligned
                    </th>
                    <th scope="col" class="num">
                      SPF failed
                    </th>
                    <th scope="col" class="num">
                      Quarantined
                    </th>
                    <th scope="col" class="num">
                      Rejected
                    </th>
                    <th scope="col">Reported by</th>
                    <th scope="col">Last seen</th>
                  </tr>
                </thead>
                <tbody>
                  {data.sources.map((s) => (
                    <tr key={s.sourceIp} data-ip={s.sourceIp}>
                      <th scope="row">
                        <code>{s.sourceIp}</code>
                      </th>
                      <td class="num">{formatNumber(s.count)}</td>
                      <td class="num">{formatNumber(s.dkim.pass)}</td>
                      <td class="num">{formatNumber(s.dkim.fail)}</td>
                      <td class="num">{formatNumber(s.spf.pass)}</td>
                      <td class="num">{formatNumber(s.spf.fail)}</td>
                      <td class="num">{formatNumber(s.disposition.quarantine)}</td>
                      <td class="num">{formatNumber(s.disposition.reject)}</td>
                      <td>{s.reporters.join(', ')}</td>
                      <td>
                        <time dateTime={s.lastSeen}>{formatDate(s.lastSeen)}</time>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
        </div>
      )}
    </section>
  );
}
