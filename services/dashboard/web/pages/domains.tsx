import { useState } from 'preact/hooks';
import { del, post } from '../api.js';
import { Field, PanelForm } from '../kit/form.js';
import { usePagedList } from '../kit/list-page.js';
import { isAdmin, type Session } from '../session.js';
import { ListTable, RowButton } from '../table.js';
import { ConfirmButtons, formatDate, Page, useActionError } from '../ui.js';
import { DmarcReports } from './domain-dmarc.js';
import { type Domain, DomainBadge, Records } from './domain-records.js';

type Tab = 'records' | 'dmarc';
const TABS: readonly [Tab, string][] = [
  ['records', 'Records'],
  ['dmarc', 'DMARC reports'],
];
/** The text of a domain row's button to each tab (heard as the tab's label "of <domain>"). */
const ROW_TAB_TEXT: Record<Tab, string> = { records: 'Records', dmarc: 'DMARC' };

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
  const { list, table } = usePagedList<Domain>('/domains', 'Domain pages');
  const [shown, setShown] = useState<Domain | undefined>();
  const [tab, setTab] = useState<Tab>('records');
  const [name, setName] = useState('');
  const form = useActionError();
  const action = useActionError();
  const [confirming, setConfirming] = useState<string | undefined>();

  const add = async () => {
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
        <PanelForm id="new-domain" title="Add a domain" submit="Add domain" error={form.error} onSubmit={add}>
          <Field
            id="domain-name"
            label="Domain name"
            required
            placeholder="example.com"
            autoComplete="off"
            spellcheck={false}
            value={name}
            onInput={setName}
          />
        </PanelForm>
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
        {...table}
        what="sending domains"
        label="Sending domains"
        testId="domains"
        columns={['Domain', 'Status', 'Added', 'Verified', 'Actions']}
        actionError={action.error}
        empty={<p class="muted">No domain yet.</p>}
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
                {TABS.map(([t, label]) => (
                  <RowButton
                    key={t}
                    label={`${label} of ${d.name}`}
                    pressed={shown?.id === d.id && tab === t}
                    onClick={() => {
                      setShown(d);
                      setTab(t);
                    }}
                  >
                    {ROW_TAB_TEXT[t]}
                  </RowButton>
                ))}
                {admin &&
                  (confirming === d.id ? (
                    <ConfirmButtons
                      label="Confirm delete"
                      onConfirm={() => remove(d)}
                      onKeep={() => setConfirming(undefined)}
                    />
                  ) : (
                    <RowButton label={`Delete ${d.name}`} onClick={() => setConfirming(d.id)}>
                      Delete
                    </RowButton>
                  ))}
              </span>
            </td>
          </tr>
        )}
      />
    </Page>
  );
}
