import { useState } from 'preact/hooks';
import { del, get, patch, post, query } from '../api.js';
import { DailyChart } from '../chart.js';
import { DeleteButton, DetailPage, EditToggle, useDetail } from '../kit/detail.js';
import { navigate } from '../router.js';
import type { Campaign, CampaignDay } from '../types.js';
import {
  Alert,
  ErrorNotice,
  formatDate,
  formatNumber,
  Loading,
  PeriodSwitch,
  ProgressBar,
  StatsCards,
  StatusBadge,
  useActionError,
  useLoad,
  usePoll,
} from '../ui.js';
import { CampaignEditor, draftOf, Preview } from './campaign-editor.js';

/** How often a campaign in progress is read again. */
const POLL_MS = 2000;
/** After this long past its fan-out a sent campaign is taken as settled (mail that never reports). */
const SETTLE_MS = 10 * 60_000;
const DAILY_SERIES = [
  { key: 'sent', label: 'Sent', color: '#0b4f6c' },
  { key: 'delivered', label: 'Delivered', color: '#116329' },
  { key: 'opened', label: 'Opened', color: '#1a7f37' },
  { key: 'clicked', label: 'Clicked', color: '#8250df' },
  { key: 'bounced', label: 'Bounced', color: '#cf222e' },
] as const;

/** Whether a sent campaign's figures can still move (mail still on its way), so it is polled. */
function settling(c: Campaign, now: number): boolean {
  if (c.status === 'scheduled' || c.status === 'sending') return true;
  if (c.status !== 'sent') return false;
  if (c.sentAt !== null && now - Date.parse(c.sentAt) > SETTLE_MS) return false;
  const s = c.stats;
  return s.sent < s.recipients || s.delivered + s.bounced < s.sent;
}

export function CampaignDetail({ id }: { id: string }) {
  const { path, load: campaign } = useDetail<Campaign>('campaigns', id);
  const c = campaign.data;
  const live = c !== undefined && settling(c, Date.now());
  usePoll(live, POLL_MS, campaign.reload);
  const action = useActionError();
  const [editing, setEditing] = useState(false);
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
    <DetailPage
      load={campaign}
      noun="Campaign"
      list="campaigns"
      attrs={(c) => ({ 'data-status': c.status, 'data-live': live })}
    >
      {(c) => (
        <>
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
                <EditToggle editing={editing} setEditing={setEditing} label="Edit draft" />
                <DeleteButton
                  label="Delete draft"
                  confirm="Confirm delete"
                  onConfirm={() =>
                    action.run(async () => {
                      await del(path);
                      navigate('/campaigns');
                    })
                  }
                />
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
        </>
      )}
    </DetailPage>
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
