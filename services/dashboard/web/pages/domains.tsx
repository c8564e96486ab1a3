import { useState } from 'preact/hooks';
import { del, get, post, query } from '../api.js';
import { routeHref } from '../router.js';
import { isAdmin, type Session } from '../session.js';
import { EmptyState, ListTable, TableWrap } from '../table.js';
import type { DmarcSummary } from '../types.js';
import {
  Alert,
  ConfirmButtons,
  ErrorNotice,
  formatDate,
  formatNumber,
  Loading,
  Page,
  PeriodSwitch,
  useActionError,
  useLoad,
} from '../ui.js';

/** `/domains` (SPEC §20): a sending domain and the DNS records that verify it. */
interface DomainRecord {
  purpose: 'dkim' | 'return_path_mx' | 'return_path_spf' | 'dmarc';
  type: 'TXT' | 'MX';
  name: string;
  value: string;
  status: 'pending' | 'verified' | 'failed';
}
interface Domain {
  id: string;
  name: string;
  status: 'pending' | 'verified' | 'failed';
  records: DomainRecord[];
  reason: string | null;
  createdAt: string;
  verifiedAt: string | null;
  lastCheckedAt: string | null;
}

const PURPOSE: Record<DomainRecord['purpose'], string> = {
  dkim: 'DKIM (signature key)',
  return_path_mx: 'Return path (bounces)',
  return_path_spf: 'Return path (SPF)',
  dmarc: 'DMARC (suggested, optional)',
};

/** The badge colours the other pages use: verified reads like delivered, pending like scheduled. */
const BADGE: Record<Domain['status'], string> = {
  verified: 'delivered',
  pending: 'scheduled',
  failed: 'failed',
};

function DomainBadge({ status }: { status: Domain['status'] }) {
  return <span class={`badge badge-${BADGE[status]}`}>{status}</span>;
}

/** A value with a copy button (DNS providers want the exact text). */
function Copyable({ value, label }: { value: string; label: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <span class="copyable">
      <code class="break">{value}</code>
      <button
        type="button"
        class="secondary"
        aria-label={`${copied ? 'Copied' : 'Copy'} ${label}`}
        onClick={() =>
          navigator.clipboard?.writeText(value).then(
            () => setCopied(true),
            () => setCopied(false),
          )
        }
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </span>
  );
}

/** The records of one domain to publish, each with its status, and "verify now". */
function Records({
  domain,
  admin,
  onChecked,
}: {
  domain: Domain;
  admin: boolean;
  onChecked: (d: Domain) => void;
}) {
  const check = useActionError();
  const [busy, setBusy] = useState(false);
  const verify = async () => {
    setBusy(true);
    await check.run(async () =>
      onChecked((await post<Domain>(`/domains/${encodeURIComponent(domain.id)}/verify`)).body),
    );
    setBusy(false);
  };
  return (
    <section class="panel" aria-labelledby="records-title" data-testid="domain-records">
      <h2 id="records-title">
        Records for {domain.name} <DomainBadge status={domain.status} />
      </h2>
      <p>
        Publish these records at your DNS provider, exactly as shown (an MX priority of 10 is fine). Tern
        checks them on its own — often at first, then hourly, for 72 hours — or when you press “Verify now”.
        Once DKIM and the return path match, every message from {domain.name} (or a subdomain) is DKIM-signed.
      </p>
      {domain.reason && (
        <p class="notice" role="status" data-testid="domain-reason">
          {domain.reason}
        </p>
      )}
      <TableWrap label={`DNS records of ${domain.name}`}>
        <table data-testid="records">
          <thead>
            <tr>
              <th scope="col">For</th>
              <th scope="col">Type</th>
              <th scope="col">Name</th>
              <th scope="col">Value</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {domain.records.map((r) => (
              <tr key={r.purpose} data-purpose={r.purpose}>
                <th scope="row">{PURPOSE[r.purpose]}</th>
                <td>{r.type}</td>
                <td>
                  <Copyable value={r.name} label={`${r.purpose} name`} />
                </td>
                <td>
                  <Copyable value={r.value} label={`${r.purpose} value`} />
                </td>
                <td>
                  <DomainBadge status={r.status} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
      <p class="muted">
        Last checked {formatDate(domain.lastCheckedAt)}
        {domain.verifiedAt && <> · verified {formatDate(domain.verifiedAt)}</>}
      </p>
      <Alert message={check.error} />
      {admin && (
        <button type="button" onClick={verify} disabled={busy}>
          {busy ? 'Checking…' : 'Verify now'}
        </button>
      )}
    </section>
  );
}

/**
 * The DMARC tab of a domain (SPEC §26 `GET /domains/:id/dmarc`): what receivers' aggregate reports
 * said of the mail sent as the domain, by sending source IP — volumes, the DMARC-aligned DKIM and
 * SPF results, the receivers' dispositions, who reported.
 */
function DmarcReports({ domain }: { domain: Domain }) {
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

type Tab = 'records' | 'dmarc';
const TABS: readonly [Tab, string][] = [
  ['records', 'Records'],
  ['dmarc', 'DMARC reports'],
];

/** A domain's page: its records to publish, and its DMARC reports, as tabs (arrow keys move). */
function DomainPanel({
  domain,
  tab,
  onTab,
  admin,
  onChecked,
}: {
  domain: Domain;
  tab: Tab;
  onTab: (t: Tab) => void;
  admin: boolean;
  onChecked: (d: Domain) => void;
}) {
  const move = (e: KeyboardEvent) => {
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
    e.preventDefault();
    const i = TABS.findIndex(([t]) => t === tab);
    const next = TABS[(i + (e.key === 'ArrowRight' ? 1 : TABS.length - 1)) % TABS.length]![0];
    onTab(next);
    document.getElementById(`domain-tab-${next}`)?.focus();
  };
  return (
    <div data-testid="domain-page" data-id={domain.id}>
      <div class="tabs" role="tablist" aria-label={`Domain ${domain.name}`}>
        {TABS.map(([t, label]) => (
          <button
            key={t}
            type="button"
            role="tab"
            id={`domain-tab-${t}`}
            aria-selected={tab === t}
            {...(tab === t ? { 'aria-controls': `domain-tabpanel-${t}` } : {})}
            tabIndex={tab === t ? 0 : -1}
            onClick={() => onTab(t)}
            onKeyDown={move}
          >
            {label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`domain-tabpanel-${tab}`} aria-labelledby={`domain-tab-${tab}`}>
        {tab === 'records' ? (
          <Records domain={domain} admin={admin} onChecked={onChecked} />
        ) : (
          <DmarcReports domain={domain} />
        )}
      </div>
    </div>
  );
}

/** SPEC §20: add a domain, publish its records, see it verified. Owners and admins change; anyone reads. */
export function DomainsPage({ session }: { session: Session }) {
  const admin = isAdmin(session);
  const [page, setPage] = useState(1);
  const list = useLoad(
    () =>
      get<{ data: Domain[]; meta: { page: number; totalPages: number } }>(
        `/domains${query({ page, limit: 20 })}`,
      ).then((r) => r.body),
    [page],
  );
  const [shown, setShown] = useState<Domain | undefined>();
  const [tab, setTab] = useState<Tab>('records');
  const [name, setName] = useState('');
  const form = useActionError();
  const action = useActionError();
  const [confirming, setConfirming] = useState<string | undefined>();

  const add = async (e: Event) => {
    e.preventDefault();
    await form.run(async () => {
      const res = await post<Domain>('/domains', { name: name.trim() });
      setShown(res.body);
      setTab('records');
      setName('');
      list.reload();
    });
  };

  const remove = (d: Domain) =>
    action.run(async () => {
      await del(`/domains/${encodeURIComponent(d.id)}`);
      setConfirming(undefined);
      if (shown?.id === d.id) setShown(undefined);
      list.reload();
    });

  return (
    <Page title="Domains">
      <p>
        Tern signs mail (DKIM) only for domains you verify. Add the domain you send from, publish the records
        Tern shows at your DNS provider, then verify.
        {!admin && ' You are signed in as a member: an owner or admin adds, verifies and deletes domains.'}
      </p>
      {admin && (
        <form class="panel" aria-labelledby="new-domain" onSubmit={add}>
          <h2 id="new-domain">Add a domain</h2>
          <label for="domain-name">Domain name</label>
          <input
            id="domain-name"
            required
            placeholder="example.com"
            autoComplete="off"
            spellcheck={false}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
          <Alert message={form.error} />
          <button type="submit">Add domain</button>
        </form>
      )}
      {shown && (
        <DomainPanel
          domain={shown}
          tab={tab}
          onTab={setTab}
          admin={admin}
          onChecked={(d) => {
            setShown(d);
            list.reload();
          }}
        />
      )}
      <h2>Your domains</h2>
      <ListTable
        load={list}
        items={list.data?.data}
        what="sending domains"
        label="Sending domains"
        testId="domains"
        columns={['Domain', 'Status', 'Added', 'Verified', 'Actions']}
        actionError={action.error}
        empty={<p class="muted">No domain yet.</p>}
        pager={
          list.data && {
            page: list.data.meta.page,
            totalPages: list.data.meta.totalPages,
            onPage: setPage,
            label: 'Domain pages',
          }
        }
        row={(d) => (
          <tr key={d.id} data-id={d.id}>
            <th scope="row">{d.name}</th>
            <td>
              <DomainBadge status={d.status} />
            </td>
            <td>{formatDate(d.createdAt)}</td>
            <td>{formatDate(d.verifiedAt)}</td>
            <td>
              <span class="row">
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Records of ${d.name}`}
                  aria-pressed={shown?.id === d.id && tab === 'records'}
                  onClick={() => {
                    setShown(d);
                    setTab('records');
                  }}
                >
                  Records
                </button>
                <button
                  type="button"
                  class="secondary"
                  aria-label={`DMARC reports of ${d.name}`}
                  aria-pressed={shown?.id === d.id && tab === 'dmarc'}
                  onClick={() => {
                    setShown(d);
                    setTab('dmarc');
                  }}
                >
                  DMARC
                </button>
                {admin &&
                  (confirming === d.id ? (
                    <ConfirmButtons
                      label="Confirm delete"
                      onConfirm={() => remove(d)}
                      onKeep={() => setConfirming(undefined)}
                    />
                  ) : (
                    <button
                      type="button"
                      class="secondary"
                      aria-label={`Delete ${d.name}`}
                      onClick={() => setConfirming(d.id)}
                    >
                      Delete
                    </button>
                  ))}
              </span>
            </td>
          </tr>
        )}
      />
    </Page>
  );
}
