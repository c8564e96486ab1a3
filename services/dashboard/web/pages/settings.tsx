import { useEffect, useState } from 'preact/hooks';
import { get, put } from '../api.js';
import { Check, Field } from '../kit/form.js';
import { TenantWide } from '../project.js';
import { isAdmin, type Session } from '../session.js';
import type { TenantSettings } from '../types.js';
import { Alert, ErrorNotice, Loading, Page, useActionError, useLoad } from '../ui.js';

/**
 * The tenant's settings (SPEC §9 retention, §11 tracking): every role reads them, owners and
 * admins change them (the API enforces the same; a member's form is read-only).
 */
export function SettingsPage({ session }: { session: Session }) {
  const admin = isAdmin(session);
  const path = `/tenants/${encodeURIComponent(session.tenantId)}/settings`;
  const settings = useLoad(() => get<TenantSettings>(path).then((r) => r.body), [path]);
  const [form, setForm] = useState<{ opens: boolean; clicks: boolean; retention: string; rate: string }>();
  const save = useActionError();
  const [saved, setSaved] = useState(false);

  useEffect(() => {
    const s = settings.data;
    if (s)
      setForm({
        opens: s.tracking.opens,
        clicks: s.tracking.clicks,
        retention: s.retentionDays === null ? '' : String(s.retentionDays),
        rate: s.sendRatePerSecond === null ? '' : String(s.sendRatePerSecond),
      });
  }, [settings.data]);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!form) return;
    setSaved(false);
    const retention = form.retention.trim();
    const days = retention === '' ? null : Number(retention);
    if (days !== null && !(Number.isInteger(days) && days >= 1 && days <= 3650)) {
      save.setError('Retention must be a whole number of days from 1 to 3650, or empty for the default.');
      return;
    }
    const rateText = form.rate.trim();
    const rate = rateText === '' ? null : Number(rateText);
    if (rate !== null && !(Number.isInteger(rate) && rate >= 1 && rate <= 1_000_000)) {
      save.setError(
        'The send rate must be a whole number of emails per second from 1 to 1000000, or empty for the default.',
      );
      return;
    }
    const ok = await save.run(() =>
      put(path, {
        retentionDays: days,
        tracking: { opens: form.opens, clicks: form.clicks },
        sendRatePerSecond: rate,
      }),
    );
    if (ok) {
      setSaved(true);
      settings.reload();
    }
  };

  return (
    <Page title="Settings">
      <TenantWide what="Settings" />
      {!admin && (
        <p class="notice" role="status">
          Only a tenant owner or admin changes the settings. You are signed in as a member: you can read them.
        </p>
      )}
      {settings.error && <ErrorNotice error={settings.error} what="tenant settings" />}
      {!settings.data && settings.loading && <Loading />}
      {settings.data && form && (
        <form class="panel" onSubmit={submit} aria-labelledby="settings-form" data-testid="settings">
          <h2 id="settings-form">Tenant {session.tenantId}</h2>
          <fieldset disabled={!admin}>
            <legend>Tracking of sent mail</legend>
            <p class="muted">
              Opens: a 1×1 image in the HTML part. Clicks: links rewritten through Tern. Scanners are recorded
              but not counted.
            </p>
            <Check checked={form.opens} onChange={(opens) => setForm({ ...form, opens })}>
              Track opens
            </Check>
            <Check checked={form.clicks} onChange={(clicks) => setForm({ ...form, clicks })}>
              Track clicks
            </Check>
          </fieldset>
          <fieldset disabled={!admin}>
            <legend>Retention</legend>
            <Field
              id="set-retention"
              label="Keep logs and analytics for (days)"
              type="number"
              inputMode="numeric"
              min={1}
              max={3650}
              placeholder={`${settings.data.defaultRetentionDays} (server default)`}
              aria-describedby="set-retention-help"
              value={form.retention}
              onInput={(retention) => setForm({ ...form, retention })}
            />
            <p class="muted" id="set-retention-help">
              Empty: the server default, {settings.data.defaultRetentionDays} days (now{' '}
              <span data-testid="retention-now">
                {settings.data.retentionDays ?? settings.data.defaultRetentionDays} days
              </span>
              ). A shorter period hides older emails at once; the retention job deletes them later.
            </p>
          </fieldset>
          <fieldset disabled={!admin} data-testid="send-limits">
            <legend>Sending limits</legend>
            <Field
              id="set-rate"
              label="Emails handed to the provider per second, at most"
              type="number"
              inputMode="numeric"
              min={1}
              max={1000000}
              placeholder={`${defaultRate(settings.data.defaultSendRatePerSecond)} (server default)`}
              aria-describedby="set-rate-help"
              value={form.rate}
              onInput={(rate) => setForm({ ...form, rate })}
            />
            <p class="muted" id="set-rate-help">
              Empty: the server default, {defaultRate(settings.data.defaultSendRatePerSecond)} (now{' '}
              <span data-testid="rate-now">
                {settings.data.sendRatePerSecond === null
                  ? defaultRate(settings.data.defaultSendRatePerSecond)
                  : `${settings.data.sendRatePerSecond} per second`}
              </span>
              ). Emails past it wait for the next second; password resets and other single sends go ahead of
              campaign and sequence mail.
            </p>
          </fieldset>
          <Alert message={save.error} />
          {saved && (
            <p class="muted" role="status">
              Saved.
            </p>
          )}
          {admin && <button type="submit">Save settings</button>}
        </form>
      )}
    </Page>
  );
}

/** The server default send rate in words (0 = unlimited). */
const defaultRate = (n: number) => (n === 0 ? 'unlimited' : `${n} per second`);
