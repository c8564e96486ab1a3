import { useState } from 'preact/hooks';
import { post } from '../api.js';
import { RowButton, TableHead, TableWrap } from '../table.js';
import { Alert, formatDate, useActionError, useCopy } from '../ui.js';

/** A sending domain (SPEC §20) as `GET /domains` answers it, and the DNS records that verify it. */
export interface DomainRecord {
  purpose: 'dkim' | 'return_path_mx' | 'return_path_spf' | 'dmarc';
  type: 'TXT' | 'MX';
  name: string;
  value: string;
  status: 'pending' | 'verified' | 'failed';
}
export interface Domain {
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

export function DomainBadge({ status }: { status: Domain['status'] }) {
  return <span class={`badge badge-${BADGE[status]}`}>{status}</span>;
}

/** A value with a copy button (DNS providers want the exact text). */
function Copyable({ value, label }: { value: string; label: string }) {
  const [copied, copy] = useCopy(value);
  return (
    <span class="copyable">
      <code class="break">{value}</code>
      <RowButton label={`${copied ? 'Copied' : 'Copy'} ${label}`} onClick={copy}>
        {copied ? 'Copied' : 'Copy'}
      </RowButton>
    </span>
  );
}

/** The records of one domain to publish, each with its status, and "verify now". */
export function Records({
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
          <TableHead columns={['For', 'Type', 'Name', 'Value', 'Status']} />
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
