import { useEffect, useState } from 'preact/hooks';
import { del, get, patch, post, query } from '../api.js';
import { DailyChart } from '../chart.js';
import { TenantWide } from '../project.js';
import { navigate, routeHref } from '../router.js';
import type { Audience, Campaign, CampaignDay, List, Rendered, Template } from '../types.js';
import {
  Alert,
  ConfirmButtons,
  EmptyState,
  ErrorNotice,
  formatDate,
  formatNumber,
  HtmlPreview,
  ListTable,
  Loading,
  Page,
  PeriodSwitch,
  ProgressBar,
  pagerOf,
  StatsCards,
  StatusBadge,
  useActionError,
  useLoad,
  usePoll,
} from '../ui.js';

/** How often a campaign in progress is read again. */
const POLL_MS = 2000;
/** After this long past its fan-out a sent campaign is taken as settled (mail that never reports). */
const SETTLE_MS = 10 * 60_000;
/** The contact a preview renders for: the variables every campaign email has (SPEC §15). */
const SAMPLE_CONTACT = { email: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace' };
const DAILY_SERIES = [
  { key: 'sent', label: 'Sent', color: '#0b4f6c' },
  { key: 'delivered', label: 'Delivered', color: '#116329' },
  { key: 'opened', label: 'Opened', color: '#1a7f37' },
  { key: 'clicked', label: 'Clicked', color: '#8250df' },
  { key: 'bounced', label: 'Bounced', color: '#cf222e' },
] as const;

/** SPEC §15 campaigns: `#/campaigns` (list), `#/campaigns/new`, `#/campaigns/<id>`. */
export function CampaignsPage({ id }: { id: string }) {
  if (id === '') return <CampaignList />;
  if (id === 'new') return <NewCampaign />;
  return <CampaignDetail id={id} />;
}

function CampaignList() {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => get<List<Campaign>>(`/campaigns${query({ page, limit: 20 })}`).then((r) => r.body),
    [page],
  );
  return (
    <Page
      title="Campaigns"
      actions={
        <a class="button" href={routeHref('/campaigns/new')}>
          New campaign
        </a>
      }
    >
      <TenantWide what="Campaigns" />
      <ListTable
        load={list}
        items={list.data?.data}
        what="campaigns"
        label="Campaigns"
        testId="campaigns"
        columns={['Name', 'Status', 'Audience', 'Sent', 'When', 'Created']}
        pager={pagerOf(list.data?.meta, setPage, 'Campaign pages')}
        empty={
          <EmptyState title="No campaign yet.">
            <p>
              A campaign sends one email to every subscribed contact of an audience. First give contacts an
              audience on the <a href={routeHref('/contacts')}>Contacts</a> page (or import them), then{' '}
              <a href={routeHref('/campaigns/new')}>create a campaign</a>.
            </p>
          </EmptyState>
        }
        row={(c) => (
          <tr key={c.id} data-id={c.id}>
            <th scope="row">
              <a href={routeHref(`/campaigns/${encodeURIComponent(c.id)}`)}>{c.name}</a>
            </th>
            <td>
              <StatusBadge status={c.status} />
            </td>
            <td>{c.audience}</td>
            <td class="num">
              {c.status === 'sending' || c.status === 'sent'
                ? `${formatNumber(c.stats.sent)} of ${formatNumber(c.stats.recipients)}`
                : '—'}
            </td>
            <td>
              <time dateTime={c.sentAt ?? c.scheduledAt ?? undefined}>
                {formatDate(c.sentAt ?? c.scheduledAt)}
              </time>
            </td>
            <td>
              <time dateTime={c.createdAt}>{formatDate(c.createdAt)}</time>
            </td>
          </tr>
        )}
      />
    </Page>
  );
}

function NewCampaign() {
  return (
    <Page title="New campaign" actions={<a href={routeHref('/campaigns')}>← Campaigns</a>}>
      <CampaignEditor onSaved={(c) => navigate(`/campaigns/${encodeURIComponent(c.id)}`)} />
    </Page>
  );
}

interface Draft {
  name: string;
  from: string;
  audience: string;
  mode: 'own' | 'template';
  templateId: string;
  subject: string;
  html: string;
  text: string;
}

const draftOf = (c: Campaign | undefined): Draft => ({
  name: c?.name ?? '',
  from: c?.from ?? '',
  audience: c?.audience ?? '',
  mode: c?.templateId ? 'template' : 'own',
  templateId: c?.templateId ?? '',
  subject: c?.subject ?? '',
  html: c?.html ?? '',
  text: c?.text ?? '',
});

/**
 * The create / edit form of a draft, with the audience's reach and a live preview. A template's
 * preview is the API's own rendering (`POST /templates/:id/render`); own content is shown as
 * typed — HTML only inside a sandboxed frame (no script, no same-origin access, no remote load
 * under the CSP), never in the page itself.
 */
function CampaignEditor({ existing, onSaved }: { existing?: Campaign; onSaved: (c: Campaign) => void }) {
  const [d, setD] = useState<Draft>(() => draftOf(existing));
  const saving = useActionError();
  const templates = useLoad(
    () => get<List<Template>>(`/templates${query({ limit: 100 })}`).then((r) => r.body.data),
    [],
  );
  const set = (patchOf: Partial<Draft>) => setD((cur) => ({ ...cur, ...patchOf }));
  const field = (k: 'name' | 'from' | 'subject' | 'html' | 'text') => ({
    id: `cmp-${k}`,
    value: d[k],
    onInput: (e: { currentTarget: { value: string } }) => set({ [k]: e.currentTarget.value }),
  });

  const save = async (e: Event) => {
    e.preventDefault();
    const own = d.mode === 'own';
    const content = own
      ? { subject: d.subject, ...(d.html ? { html: d.html } : {}), ...(d.text ? { text: d.text } : {}) }
      : { templateId: d.templateId, ...(d.subject ? { subject: d.subject } : {}) };
    await saving.run(async () => {
      if (existing) {
        // A patch names every content field: what the other mode had is cleared.
        const res = await patch<Campaign>(`/campaigns/${encodeURIComponent(existing.id)}`, {
          name: d.name,
          from: d.from,
          audience: d.audience.trim(),
          templateId: own ? null : d.templateId,
          subject: d.subject || null,
          html: own && d.html ? d.html : null,
          text: own && d.text ? d.text : null,
        });
        onSaved(res.body);
      } else {
        const res = await post<Campaign>('/campaigns', {
          name: d.name,
          from: d.from,
          audience: d.audience.trim(),
          ...content,
        });
        onSaved(res.body);
      }
    });
  };

  return (
    <div class="split">
      <form class="panel" onSubmit={save} aria-labelledby="cmp-form">
        <h2 id="cmp-form">{existing ? 'Draft' : 'Campaign'}</h2>
        <label for="cmp-name">Name</label>
        <input required maxLength={100} {...field('name')} />
        <label for="cmp-from">From</label>
        <input
          required
          placeholder="Acme <news@acme.test>"
          aria-describedby="cmp-from-help"
          {...field('from')}
        />
        <p class="muted" id="cmp-from-help">
          An address, or <code>Name &lt;address&gt;</code>.
        </p>
        <AudienceField value={d.audience} onChange={(audience) => set({ audience })} />
        <fieldset>
          <legend>Content</legend>
          <label class="check">
            <input
              type="radio"
              name="cmp-mode"
              checked={d.mode === 'own'}
              onChange={() => set({ mode: 'own' })}
            />
            Write it here
          </label>
          <label class="check">
            <input
              type="radio"
              name="cmp-mode"
              checked={d.mode === 'template'}
              onChange={() => set({ mode: 'template' })}
            />
            From a template
          </label>
          {d.mode === 'template' && (
            <>
              <label for="cmp-template">Template</label>
              <select
                id="cmp-template"
                required
                value={d.templateId}
                onChange={(e) => set({ templateId: e.currentTarget.value })}
              >
                <option value="">Choose a template</option>
                {templates.data?.map((t) => (
                  <option key={t.id} value={t.id}>
                    {t.name}
                  </option>
                ))}
              </select>
              {templates.data?.length === 0 && (
                <p class="muted">
                  No template yet: write one on the <a href={routeHref('/templates')}>Templates</a> page, or
                  write the content here.
                </p>
              )}
            </>
          )}
          <label for="cmp-subject">
            {d.mode === 'own' ? 'Subject' : 'Subject (optional, replaces the template’s)'}
          </label>
          <input required={d.mode === 'own'} maxLength={998} {...field('subject')} />
          {d.mode === 'own' && (
            <>
              <label for="cmp-html">HTML</label>
              <textarea rows={8} spellcheck={false} {...field('html')} />
              <label for="cmp-text">Text</label>
              <textarea rows={4} {...field('text')} />
              <p class="muted">
                HTML or text, or both. <code>{'{{firstName}}'}</code>, <code>{'{{lastName}}'}</code>,{' '}
                <code>{'{{email}}'}</code> and the contact’s attributes are filled in for each contact; every
                email carries an unsubscribe link.
              </p>
            </>
          )}
        </fieldset>
        <Alert message={saving.error} />
        <button type="submit">{existing ? 'Save draft' : 'Create draft'}</button>
      </form>
      <Preview draft={d} />
    </div>
  );
}

/** The audience input, the audiences it may name, and whom the campaign reaches now. */
function AudienceField({ value, onChange }: { value: string; onChange: (v: string) => void }) {
  const audiences = useLoad(
    () => get<List<Audience>>(`/audiences${query({ limit: 100 })}`).then((r) => r.body.data),
    [],
  );
  // Read the count of the name typed once typing pauses (the list holds only the first 100).
  const [name, setName] = useState(value.trim());
  useEffect(() => {
    const timer = setTimeout(() => setName(value.trim()), 300);
    return () => clearTimeout(timer);
  }, [value]);
  const reach = useLoad(
    () =>
      name === ''
        ? Promise.resolve(undefined)
        : get<List<Audience>>(`/audiences${query({ name })}`).then(
            (r) => r.body.data[0] ?? { name, contacts: 0, subscribed: 0, reachable: 0 },
          ),
    [name],
  );
  return (
    <>
      <label for="cmp-audience">Audience</label>
      <input
        id="cmp-audience"
        required
        list="cmp-audiences"
        aria-describedby="cmp-reach"
        value={value}
        onInput={(e) => onChange(e.currentTarget.value)}
      />
      <datalist id="cmp-audiences">
        {audiences.data?.map((a) => (
          <option key={a.name} value={a.name}>
            {`${a.reachable} reachable`}
          </option>
        ))}
      </datalist>
      <p class="muted" id="cmp-reach" aria-live="polite" data-testid="reach">
        {reach.data
          ? `Reaches ${formatNumber(reach.data.reachable)} contacts now (${formatNumber(reach.data.contacts)} in the audience, ${formatNumber(reach.data.subscribed)} subscribed; suppressed addresses are left out).`
          : audiences.data?.length === 0
            ? 'No audience yet: give contacts an audience on the Contacts page.'
            : 'Type or choose an audience to see how many contacts it reaches.'}
      </p>
    </>
  );
}

/** What a contact would see: the template rendered by the API, or the content as typed. */
function Preview({ draft }: { draft: Draft }) {
  const rendered = useLoad(
    () =>
      draft.mode === 'template' && draft.templateId
        ? post<Rendered>(`/templates/${encodeURIComponent(draft.templateId)}/render`, {
            variables: SAMPLE_CONTACT,
          }).then((r) => r.body)
        : Promise.resolve(undefined),
    [draft.mode, draft.templateId],
  );
  const own = draft.mode === 'own';
  const subject = draft.subject || (own ? '' : (rendered.data?.subject ?? ''));
  const html = own ? draft.html : (rendered.data?.html ?? '');
  const text = own ? draft.text : (rendered.data?.text ?? '');
  return (
    <section class="panel" aria-labelledby="cmp-preview" data-testid="preview">
      <h2 id="cmp-preview">Preview</h2>
      <p class="muted">
        {own
          ? 'As typed: the variables are filled in per contact when it is sent.'
          : `Rendered by Tern for a sample contact (${SAMPLE_CONTACT.firstName} ${SAMPLE_CONTACT.lastName}).`}
      </p>
      {rendered.error && <ErrorNotice error={rendered.error} what="template previews" />}
      <p>
        <strong>Subject:</strong> <span data-testid="preview-subject">{subject || '—'}</span>
      </p>
      {html ? (
        <HtmlPreview html={html} title="Campaign preview" />
      ) : text ? (
        <pre class="text-body" data-testid="preview-text">
          {text}
        </pre>
      ) : (
        <p class="muted">Nothing to show yet.</p>
      )}
    </section>
  );
}

/** Whether a sent campaign's figures can still move (mail still on its way), so it is polled. */
function settling(c: Campaign, now: number): boolean {
  if (c.status === 'scheduled' || c.status === 'sending') return true;
  if (c.status !== 'sent') return false;
  if (c.sentAt !== null && now - Date.parse(c.sentAt) > SETTLE_MS) return false;
  const s = c.stats;
  return s.sent < s.recipients || s.delivered + s.bounced < s.sent;
}

function CampaignDetail({ id }: { id: string }) {
  const path = `/campaigns/${encodeURIComponent(id)}`;
  const campaign = useLoad(() => get<Campaign>(path).then((r) => r.body), [path]);
  const c = campaign.data;
  const live = c !== undefined && settling(c, Date.now());
  usePoll(live, POLL_MS, campaign.reload);
  const action = useActionError();
  const [editing, setEditing] = useState(false);
  const [confirming, setConfirming] = useState(false);
  // "Refresh" once the page stopped following: opens and clicks keep coming for days.
  const [version, setVersion] = useState(0);
  const refresh = () => {
    setVersion((v) => v + 1);
    campaign.reload();
  };

  const run = (fn: () => Promise<unknown>) =>
    action.run(async () => {
      await fn();
      campaign.reload();
    });

  return (
    <Page
      title={c ? `Campaign ${c.name}` : 'Campaign'}
      actions={<a href={routeHref('/campaigns')}>← Campaigns</a>}
    >
      {campaign.error && <ErrorNotice error={campaign.error} what="campaigns" />}
      {!c && campaign.loading && <Loading />}
      {c && (
        <div data-testid="campaign" data-status={c.status} data-live={live}>
          <dl class="fields">
            <dt>Status</dt>
            <dd>
              <span data-testid="campaign-status">
                <StatusBadge status={c.status} />
              </span>
              {live ? (
                <span class="muted"> · updating every {POLL_MS / 1000} s</span>
              ) : (
                c.status === 'sent' && (
                  <>
                    {' '}
                    <button type="button" class="secondary" onClick={refresh}>
                      Refresh
                    </button>
                  </>
                )
              )}
            </dd>
            <dt>Audience</dt>
            <dd>{c.audience}</dd>
            <dt>From</dt>
            <dd>{c.from}</dd>
            {c.scheduledAt && (
              <>
                <dt>Scheduled</dt>
                <dd>{formatDate(c.scheduledAt)}</dd>
              </>
            )}
            {c.sentAt && (
              <>
                <dt>Fanned out</dt>
                <dd>{formatDate(c.sentAt)}</dd>
              </>
            )}
            <dt>Id</dt>
            <dd>
              <code>{c.id}</code>
            </dd>
          </dl>
          <Alert message={action.error} />
          {c.status === 'draft' && (
            <>
              <SendPanel campaign={c} run={run} />
              <div class="row">
                <button
                  type="button"
                  class="secondary"
                  aria-expanded={editing}
                  onClick={() => setEditing(!editing)}
                >
                  {editing ? 'Close the editor' : 'Edit draft'}
                </button>
                {confirming ? (
                  <ConfirmButtons
                    label="Confirm delete"
                    onConfirm={() =>
                      action.run(async () => {
                        await del(path);
                        navigate('/campaigns');
                      })
                    }
                    onKeep={() => setConfirming(false)}
                  />
                ) : (
                  <button type="button" class="secondary" onClick={() => setConfirming(true)}>
                    Delete draft
                  </button>
                )}
              </div>
              {editing ? (
                <CampaignEditor
                  existing={c}
                  onSaved={() => {
                    setEditing(false);
                    campaign.reload();
                  }}
                />
              ) : (
                <Preview draft={draftOf(c)} />
              )}
            </>
          )}
          {c.status === 'scheduled' && (
            <div class="panel">
              <p>
                Sends at <strong>{formatDate(c.scheduledAt)}</strong> to the audience as it is then.
              </p>
              <button type="button" class="danger" onClick={() => run(() => post(`${path}/cancel`))}>
                Cancel campaign
              </button>
            </div>
          )}
          {c.status === 'cancelled' && <p class="notice">Cancelled: this campaign sends nothing.</p>}
          {(c.status === 'sending' || c.status === 'sent') && <Progress campaign={c} />}
          {c.status === 'sent' && <CampaignDaily id={c.id} settled={!live} version={version} />}
          {c.status !== 'draft' && <Preview draft={draftOf(c)} />}
        </div>
      )}
    </Page>
  );
}

/** Send now, or schedule: `scheduledAt` is set on the draft, then `send` makes it `scheduled`. */
function SendPanel({ campaign, run }: { campaign: Campaign; run: (fn: () => Promise<unknown>) => unknown }) {
  const path = `/campaigns/${encodeURIComponent(campaign.id)}`;
  const [at, setAt] = useState('');
  const [problem, setProblem] = useState<string | undefined>();
  return (
    <section class="panel" aria-labelledby="cmp-send">
      <h2 id="cmp-send">Send</h2>
      <div class="row">
        <button
          type="button"
          onClick={() =>
            run(async () => {
              if (campaign.scheduledAt !== null) await patch(path, { scheduledAt: null });
              await post(`${path}/send`);
            })
          }
        >
          Send now
        </button>
      </div>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setProblem(undefined);
          const when = new Date(at);
          if (Number.isNaN(when.getTime())) return setProblem('Choose a date and time.');
          run(async () => {
            await patch(path, { scheduledAt: when.toISOString() });
            await post(`${path}/send`);
          });
        }}
      >
        <label for="cmp-at">Or send at (your local time; at most 30 days ahead)</label>
        <div class="row">
          <input
            id="cmp-at"
            type="datetime-local"
            required
            value={at}
            onInput={(e) => setAt(e.currentTarget.value)}
          />
          <button type="submit" class="secondary">
            Schedule
          </button>
        </div>
        <Alert message={problem} />
      </form>
    </section>
  );
}

/** While sending and after: emails sent of the recipients the fan-out created, then the stats. */
function Progress({ campaign: c }: { campaign: Campaign }) {
  const s = c.stats;
  return (
    <section aria-labelledby="cmp-progress">
      <h2 id="cmp-progress">{c.status === 'sending' ? 'Sending' : 'Results'}</h2>
      {s.recipients === 0 && c.status === 'sending' ? (
        <ProgressBar id="cmp-progressbar" label="Progress" text="Taking the audience…" />
      ) : (
        <ProgressBar
          id="cmp-progressbar"
          label="Progress"
          value={s.sent}
          max={s.recipients}
          text={`${formatNumber(s.sent)} of ${formatNumber(s.recipients)} sent${c.status === 'sending' ? ' (recipients are still being added)' : ''}`}
        />
      )}
      <StatsCards stats={s} />
    </section>
  );
}

/** The campaign's emails per day of what happened to them (`GET /campaigns/:id/daily`). */
function CampaignDaily({ id, settled, version }: { id: string; settled: boolean; version: number }) {
  const [days, setDays] = useState(7);
  const daily = useLoad(
    () =>
      get<{ daily: CampaignDay[] }>(`/campaigns/${encodeURIComponent(id)}/daily${query({ days })}`).then(
        (r) => r.body.daily,
      ),
    // Once more when the figures settle or on "Refresh": the chart is read per state, not per poll.
    [id, days, settled, version],
  );
  return (
    <section aria-labelledby="cmp-daily">
      <div class="page-head">
        <h2 id="cmp-daily">Daily, last {days} days</h2>
        <PeriodSwitch days={days} onChange={setDays} />
      </div>
      {daily.error && <ErrorNotice error={daily.error} what="a campaign's daily figures" />}
      {!daily.data && daily.loading && <Loading />}
      {daily.data && <DailyChart daily={daily.data} series={DAILY_SERIES} label="The campaign’s emails" />}
    </section>
  );
}
