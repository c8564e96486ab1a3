import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, ' UTC');
}

export const formatNumber = (n: number) => n.toLocaleString('en-US');

/** One async load with its state; `reload()` runs it again. Stale answers are dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean }>({ loading: true });
  const seq = useRef(0);
  // The caller names what the load depends on (`deps`), like useEffect.
  const run = useCallback(() => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => mine === seq.current && setState({ data, loading: false }),
      (error: unknown) =>
        mine === seq.current &&
        setState({
          loading: false,
          error: error instanceof ApiError ? error : new ApiError(0, String(error)),
        }),
    );
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

export function ErrorNotice({ error, what }: { error: ApiError; what: string }) {
  if (error.routeMissing) {
    return (
      <p class="notice" role="status">
        This Tern does not serve {what} yet (the API answered 404 for the route).
      </p>
    );
  }
  return (
    <p class="error" role="alert">
      {error.message}
    </p>
  );
}

export function Loading() {
  return (
    <p class="muted" aria-live="polite">
      Loading…
    </p>
  );
}

export function Page({
  title,
  children,
  actions,
}: {
  title: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
}) {
  useEffect(() => {
    document.title = `${title} · Tern`;
  }, [title]);
  return (
    <section aria-labelledby="page-title">
      <header class="page-head">
        <h1 id="page-title" tabIndex={-1}>
          {title}
        </h1>
        {actions}
      </header>
      {children}
    </section>
  );
}

/**
 * A labelled progress bar with its figures in words ("12 of 50 sent"); without `max` it is
 * indeterminate (work going on whose size is unknown).
 */
export function ProgressBar({
  id,
  label,
  value,
  max,
  text,
}: {
  id: string;
  label: string;
  value?: number | undefined;
  max?: number | undefined;
  text: string;
}) {
  return (
    <div class="progress" data-testid={id}>
      <label for={id}>{label}</label>
      {max === undefined ? (
        <progress id={id} />
      ) : (
        <progress id={id} value={Math.min(value ?? 0, max)} max={Math.max(max, 1)} />
      )}
      <span class="muted" aria-live="polite">
        {text}
      </span>
    </div>
  );
}

/**
 * Runs `tick` every `ms` while `active` (and the tab is visible): a view that follows work in
 * progress without a reload. Each answer re-renders; the timer stops once `active` turns false.
 */
export function usePoll(active: boolean, ms: number, tick: () => void) {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') latest.current();
    }, ms);
    return () => clearInterval(timer);
  }, [active, ms]);
}

/** What became of sent mail, as every table and card names it: the key, its label. */
export const OUTCOME_LABELS = [
  ['sent', 'Sent'],
  ['delivered', 'Delivered'],
  ['opened', 'Opened'],
  ['clicked', 'Clicked'],
  ['bounced', 'Bounced'],
  ['complained', 'Complaints'],
] as const;

const STAT_LABELS = [
  ['recipients', 'Recipients'],
  ...OUTCOME_LABELS,
  ['unsubscribed', 'Unsubscribed'],
  ['failed', 'Not composed'],
] as const;

/**
 * A card of a `dl.cards`: its label, then its figure (`data-testid={figureId}`) and what follows it
 * (`children`: a rate).
 */
export function FigureCard({
  label,
  value,
  figureId,
  cardId,
  children,
}: {
  label: string;
  value: number;
  figureId: string;
  cardId?: string;
  children?: ComponentChildren;
}) {
  return (
    <div class="card" data-testid={cardId}>
      <dt>{label}</dt>
      <dd>
        <span class="figure" data-testid={figureId}>
          {formatNumber(value)}
        </span>
        {children}
      </dd>
    </div>
  );
}

/** SPEC §15 `stats` of a campaign or a sequence step, as figures (`data-testid="stat-<key>"`). */
export function StatsCards({ stats }: { stats: Record<(typeof STAT_LABELS)[number][0], number> }) {
  return (
    <dl class="cards" data-testid="stats">
      {STAT_LABELS.map(([key, label]) => (
        <FigureCard key={key} label={label} value={stats[key]} figureId={`stat-${key}`} />
      ))}
    </dl>
  );
}

/** Minutes as a person says them: `0` → "at once", `90` → "1 h 30 min", `2880` → "2 days". */
export function formatDelay(minutes: number): string {
  if (minutes === 0) return 'at once';
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const mins = minutes % 60;
  const parts = [
    days ? `${days} day${days === 1 ? '' : 's'}` : '',
    hours ? `${hours} h` : '',
    mins ? `${mins} min` : '',
  ];
  return parts.filter(Boolean).join(' ');
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status.toLowerCase()}`}>{status}</span>;
}

/** `value` to the clipboard on `copy()`; `copied` says whether the last copy worked. */
export function useCopy(value: string): [copied: boolean, copy: () => void] {
  const [copied, setCopied] = useState(false);
  const copy = () =>
    void navigator.clipboard?.writeText(value).then(
      () => setCopied(true),
      () => setCopied(false),
    );
  return [copied, copy];
}

/** A secret shown once (API key, webhook secret) with a copy button. */
export function ShownOnce({ label, value, onDone }: { label: string; value: string; onDone: () => void }) {
  const [copied, copy] = useCopy(value);
  return (
    <div class="shown-once" role="status">
      <p>
        <strong>{label}</strong> — copy it now: it is shown only once.
      </p>
      <code class="secret" data-testid="shown-once">
        {value}
      </code>
      <div class="row">
        <button type="button" onClick={copy}>
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" class="secondary" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

/** The rendered HTML of an email, isolated: no script, no same-origin access, no remote loads (CSP). */
export function HtmlPreview({ html, title }: { html: string; title: string }) {
  return <iframe class="preview" title={title} sandbox="" srcdoc={html} />;
}

/** The message of what an API call threw. */
export const errorMessage = (err: unknown) => (err instanceof ApiError ? err.message : String(err));

/** An error for the user (a refused form, a failed action), announced; nothing when there is none. */
export function Alert({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p class="error" role="alert">
      {message}
    </p>
  );
}

/**
 * The error of a form or of row actions: `run(action)` clears it, awaits the action and keeps
 * the message of what it threw; it resolves with whether the action succeeded.
 */
export function useActionError() {
  const [error, setError] = useState<string | undefined>();
  const run = async (action: () => Promise<unknown>): Promise<boolean> => {
    setError(undefined);
    try {
      await action();
      return true;
    } catch (err) {
      setError(errorMessage(err));
      return false;
    }
  };
  return { error, setError, run };
}

/**
 * The actions of a list's rows: `act(action)` runs one (its error kept in `error`) and reads the
 * list again either way (a refusal may be news: a 404 when someone else removed the row first).
 */
export function useRowActions(reload: () => void) {
  const { error, run } = useActionError();
  const act = async (action: () => Promise<unknown>) => {
    await run(action);
    reload();
  };
  return { error, act };
}

/** The confirm step of a destructive row action: the action, or keep. */
export function ConfirmButtons({
  label,
  onConfirm,
  onKeep,
}: {
  label: string;
  onConfirm: () => void;
  onKeep: () => void;
}) {
  return (
    <>
      <button type="button" class="danger" onClick={onConfirm}>
        {label}
      </button>
      <button type="button" class="secondary" onClick={onKeep}>
        Keep
      </button>
    </>
  );
}

/** The 7 / 30 / 90-day switch of a period (SPEC §6's periods), `aria-pressed` on the chosen one. */
export function PeriodSwitch({
  days,
  onChange,
  periods = [7, 30, 90],
}: {
  days: number;
  onChange: (days: number) => void;
  periods?: readonly number[];
}) {
  return (
    <fieldset class="segmented">
      <legend class="sr-only">Period</legend>
      {periods.map((p) => (
        <button key={p} type="button" aria-pressed={days === p} onClick={() => onChange(p)}>
          {p} days
        </button>
      ))}
    </fieldset>
  );
}
