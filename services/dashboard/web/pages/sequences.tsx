import { useState } from 'preact/hooks';
import { del, get, patch, post, query } from '../api.js';
import { TenantWide } from '../project.js';
import { navigate, routeHref } from '../router.js';
import { ENROLLMENT_STATES, type Enrollment, type List, type Sequence, type Template } from '../types.js';
import {
  Alert,
  EmptyState,
  ErrorNotice,
  formatDate,
  formatDelay,
  formatNumber,
  ListTable,
  Loading,
  Page,
  pagerOf,
  StatusBadge,
  TableWrap,
  useActionError,
  useLoad,
  usePoll,
} from '../ui.js';

const POLL_MS = 2000;
/** A page follows its sequence's mail this long after it opened or after the user's last action. */
const FOLLOW_MS = 5 * 60_000;
const MAX_STEPS = 20;

/** When step `i` (0-based) falls due, in words: "at enrollment", "1 day after step 2". */
const whenOf = (delayMinutes: number, i: number) =>
  delayMinutes === 0
    ? i === 0
      ? 'at enrollment'
      : `with step ${i}`
    : `${formatDelay(delayMinutes)} after ${i === 0 ? 'enrollment' : `step ${i}`}`;

/** SPEC §15 sequences: `#/sequences` (list), `#/sequences/new`, `#/sequences/<id>`. */
export function SequencesPage({ id }: { id: string }) {
  if (id === '') return <SequenceList />;
  if (id === 'new') return <NewSequence />;
  return <SequenceDetail id={id} />;
}

function SequenceList() {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => get<List<Sequence>>(`/sequences${query({ page, limit: 20 })}`).then((r) => r.body),
    [page],
  );
  return (
    <Page
      title="Sequences"
      actions={
        <a class="button" href={routeHref('/sequences/new')}>
          New sequence
        </a>
      }
    >
      <TenantWide what="Sequences" />
      <ListTable
        load={list}
        items={list.data?.data}
        what="sequences"
        label="Sequences"
        testId="sequences"
        columns={['Name', 'Steps', 'Active', 'Completed', 'Stopped', 'Created']}
        pager={pagerOf(list.data?.meta, setPage, 'Sequence pages')}
        empty={
          <EmptyState title="No sequence yet.">
            <p>
              A sequence sends its steps to each contact you enroll, each step a delay after the previous one
              (a drip: welcome now, tips in two days…). <a href={routeHref('/sequences/new')}>Create one</a>,
              then enroll contacts from the <a href={routeHref('/contacts')}>Contacts</a> you have.
            </p>
          </EmptyState>
        }
        row={(s) => (
          <tr key={s.id} data-id={s.id}>
            <th scope="row">
              <a href={routeHref(`/sequences/${encodeURIComponent(s.id)}`)}>{s.name}</a>
            </th>
            <td class="num">{s.steps.length}</td>
            <td class="num">{formatNumber(s.enrollments.active)}</td>
            <td class="num">{formatNumber(s.enrollments.completed)}</td>
            <td class="num">{formatNumber(s.enrollments.stopped + s.enrollments.cancelled)}</td>
            <td>
              <time dateTime={s.createdAt}>{formatDate(s.createdAt)}</time>
            </td>
          </tr>
        )}
      />
    </Page>
  );
}

function NewSequence() {
  return (
    <Page title="New sequence" actions={<a href={routeHref('/sequences')}>← Sequences</a>}>
      <SequenceEditor onSaved={(s) => navigate(`/sequences/${encodeURIComponent(s.id)}`)} />
    </Page>
  );
}

interface StepDraft {
  delayMinutes: string;
  mode: 'own' | 'template';
  templateId: string;
  subject: string;
  html: string;
  text: string;
}

const emptyStep = (delay: number): StepDraft => ({
  delayMinutes: String(delay),
  mode: 'own',
  templateId: '',
  subject: '',
  html: '',
  text: '',
});

/** The steps of a sequence (new or existing) and its name and sender; saved as a whole. */
function SequenceEditor({ existing, onSaved }: { existing?: Sequence; onSaved: (s: Sequence) => void }) {
  const [name, setName] = useState(existing?.name ?? '');
  const [from, setFrom] = useState(existing?.from ?? '');
  const [steps, setSteps] = useState<StepDraft[]>(
    existing?.steps.map((s) => ({
      delayMinutes: String(s.delayMinutes),
      mode: s.templateId ? 'template' : 'own',
      templateId: s.templateId ?? '',
      subject: s.subject ?? '',
      html: s.html ?? '',
      text: s.text ?? '',
    })) ?? [emptyStep(0)],
  );
  const templates = useLoad(
    () => get<List<Template>>(`/templates${query({ limit: 100 })}`).then((r) => r.body.data),
    [],
  );
  const saving = useActionError();
  const setStep = (i: number, change: Partial<StepDraft>) =>
    setSteps((cur) => cur.map((s, j) => (j === i ? { ...s, ...change } : s)));

  const save = async (e: Event) => {
    e.preventDefault();
    const body = {
      name,
      from,
      steps: steps.map((s) => ({
        delayMinutes: Number(s.delayMinutes),
        ...(s.mode === 'template'
          ? { templateId: s.templateId, ...(s.subject ? { subject: s.subject } : {}) }
          : { subject: s.subject, ...(s.html ? { html: s.html } : {}), ...(s.text ? { text: s.text } : {}) }),
      })),
    };
    await saving.run(async () => {
      const res = existing
        ? await patch<Sequence>(`/sequences/${encodeURIComponent(existing.id)}`, body)
        : await post<Sequence>('/sequences', body);
      onSaved(res.body);
    });
  };

  return (
    <form class="panel" onSubmit={save} aria-labelledby="seq-form">
      <h2 id="seq-form">{existing ? 'Edit the sequence' : 'Sequence'}</h2>
      {existing && (
        <p class="muted">
          Enrolled contacts keep their place: their next step and its due time stay; the delays after it
          follow these steps.
        </p>
      )}
      <label for="seq-name">Name</label>
      <input
        id="seq-name"
        required
        maxLength={100}
        value={name}
        onInput={(e) => setName(e.currentTarget.value)}
      />
      <label for="seq-from">From</label>
      <input
        id="seq-from"
        required
        placeholder="Acme <hello@acme.test>"
        value={from}
        onInput={(e) => setFrom(e.currentTarget.value)}
      />
      <ol class="steps">
        {steps.map((s, i) => (
          <li key={i}>
            <fieldset>
              <legend>Step {i + 1}</legend>
              <label for={`step-${i}-delay`}>
                {i === 0 ? 'Minutes after enrollment' : `Minutes after step ${i}`}
              </label>
              <input
                id={`step-${i}-delay`}
                type="number"
                inputMode="numeric"
                required
                min={0}
                max={525600}
                aria-describedby={`step-${i}-delay-said`}
                value={s.delayMinutes}
                onInput={(e) => setStep(i, { delayMinutes: e.currentTarget.value })}
              />
              <p class="muted" id={`step-${i}-delay-said`}>
                {Number.isInteger(Number(s.delayMinutes)) && Number(s.delayMinutes) >= 0
                  ? formatDelay(Number(s.delayMinutes))
                  : 'A whole number of minutes, 0 or more.'}
              </p>
              <label class="check">
                <input
                  type="radio"
                  name={`step-${i}-mode`}
                  checked={s.mode === 'own'}
                  onChange={() => setStep(i, { mode: 'own' })}
                />
                Write it here
              </label>
              <label class="check">
                <input
                  type="radio"
                  name={`step-${i}-mode`}
                  checked={s.mode === 'template'}
                  onChange={() => setStep(i, { mode: 'template' })}
                />
                From a template
              </label>
              {s.mode === 'template' && (
                <>
                  <label for={`step-${i}-template`}>Template</label>
                  <select
                    id={`step-${i}-template`}
                    required
                    value={s.templateId}
                    onChange={(e) => setStep(i, { templateId: e.currentTarget.value })}
                  >
                    <option value="">Choose a template</option>
                    {templates.data?.map((t) => (
                      <option key={t.id} value={t.id}>
                        {t.name}
                      </option>
                    ))}
                  </select>
                </>
              )}
              <label for={`step-${i}-subject`}>{s.mode === 'own' ? 'Subject' : 'Subject (optional)'}</label>
              <input
                id={`step-${i}-subject`}
                required={s.mode === 'own'}
                maxLength={998}
                value={s.subject}
                onInput={(e) => setStep(i, { subject: e.currentTarget.value })}
              />
              {s.mode === 'own' && (
                <>
                  <label for={`step-${i}-html`}>HTML</label>
                  <textarea
                    id={`step-${i}-html`}
                    rows={4}
                    spellcheck={false}
                    value={s.html}
                    onInput={(e) => setStep(i, { html: e.currentTarget.value })}
                  />
                  <label for={`step-${i}-text`}>Text</label>
                  <textarea
                    id={`step-${i}-text`}
                    rows={3}
                    value={s.text}
                    onInput={(e) => setStep(i, { text: e.currentTarget.value })}
                  />
                </>
              )}
              {steps.length > 1 && (
                <button
                  type="button"
                  class="secondary"
                  onClick={() => setSteps((cur) => cur.filter((_, j) => j !== i))}
                >
                  Remove step {i + 1}
                </button>
              )}
            </fieldset>
          </li>
        ))}
      </ol>
      <div class="row">
        <button
          type="button"
          class="secondary"
          disabled={steps.length >= MAX_STEPS}
          onClick={() => setSteps((cur) => [...cur, emptyStep(1440)])}
        >
          Add a step
        </button>
      </div>
      <Alert message={saving.error} />
      <button type="submit">{existing ? 'Save sequence' : 'Create sequence'}</button>
    </form>
  );
}

function SequenceDetail({ id }: { id: string }) {
  const path = `/sequences/${encodeURIComponent(id)}`;
  const sequence = useLoad(() => get<Sequence>(path).then((r) => r.body), [path]);
  const [page, setPage] = useState(1);
  const [state, setState] = useState('');
  const enrollments = useLoad(
    () =>
      get<List<Enrollment>>(`${path}/enrollments${query({ page, limit: 20, state })}`).then((r) => r.body),
    [path, page, state],
  );
  const [editing, setEditing] = useState(false);
  const [email, setEmail] = useState('');
  const enrolling = useActionError();
  const action = useActionError();
  // Follow the mail for a while after the page opened or the last action: steps fall due and their
  // figures move without a reload.
  const [followFrom, setFollowFrom] = useState(() => Date.now());
  const following = Date.now() - followFrom < FOLLOW_MS;
  usePoll(following, POLL_MS, () => {
    sequence.reload();
    enrollments.reload();
  });
  const refreshed = () => {
    setFollowFrom(Date.now());
    sequence.reload();
    enrollments.reload();
  };

  const s = sequence.data;
  return (
    <Page
      title={s ? `Sequence ${s.name}` : 'Sequence'}
      actions={<a href={routeHref('/sequences')}>← Sequences</a>}
    >
      {sequence.error && <ErrorNotice error={sequence.error} what="sequences" />}
      {!s && sequence.loading && <Loading />}
      {s && (
        <div data-testid="sequence">
          <dl class="fields">
            <dt>From</dt>
            <dd>{s.from}</dd>
            <dt>Enrollments</dt>
            <dd data-testid="enrollment-counts">
              {s.enrollments.active} active, {s.enrollments.completed} completed, {s.enrollments.stopped}{' '}
              stopped, {s.enrollments.cancelled} cancelled
            </dd>
            <dt>Id</dt>
            <dd>
              <code>{s.id}</code>
            </dd>
          </dl>
          <h2>Steps</h2>
          <TableWrap label="Steps and their figures">
            <table data-testid="steps">
              <thead>
                <tr>
                  <th scope="col">Step</th>
                  <th scope="col">When</th>
                  <th scope="col">Subject</th>
                  <th scope="col" class="num">
                    Recipients
                  </th>
                  <th scope="col" class="num">
                    Sent
                  </th>
                  <th scope="col" class="num">
                    Delivered
                  </th>
                  <th scope="col" class="num">
                    Opened
                  </th>
                  <th scope="col" class="num">
                    Clicked
                  </th>
                  <th scope="col" class="num">
                    Bounced
                  </th>
                  <th scope="col" class="num">
                    Unsubscribed
                  </th>
                </tr>
              </thead>
              <tbody>
                {s.steps.map((step, i) => (
                  <tr key={i} data-step={i + 1}>
                    <th scope="row">{i + 1}</th>
                    <td>{whenOf(step.delayMinutes, i)}</td>
                    <td>{step.subject ?? (step.templateId ? `template ${step.templateId}` : '—')}</td>
                    <td class="num" data-stat="recipients">
                      {step.stats.recipients}
                    </td>
                    <td class="num" data-stat="sent">
                      {step.stats.sent}
                    </td>
                    <td class="num" data-stat="delivered">
                      {step.stats.delivered}
                    </td>
                    <td class="num" data-stat="opened">
                      {step.stats.opened}
                    </td>
                    <td class="num" data-stat="clicked">
                      {step.stats.clicked}
                    </td>
                    <td class="num" data-stat="bounced">
                      {step.stats.bounced}
                    </td>
                    <td class="num" data-stat="unsubscribed">
                      {step.stats.unsubscribed}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <div class="row">
            <button
              type="button"
              class="secondary"
              aria-expanded={editing}
              onClick={() => setEditing(!editing)}
            >
              {editing ? 'Close the editor' : 'Edit steps'}
            </button>
            <button type="button" class="secondary" onClick={refreshed}>
              Refresh
            </button>
            {following && <span class="muted">Updating every {POLL_MS / 1000} s.</span>}
          </div>
          {editing && (
            <SequenceEditor
              existing={s}
              onSaved={() => {
                setEditing(false);
                refreshed();
              }}
            />
          )}

          <h2 id="enrollments">Enrollments</h2>
          <form
            class="panel"
            aria-labelledby="enroll-title"
            onSubmit={async (e) => {
              e.preventDefault();
              const ok = await enrolling.run(() => post(`${path}/enrollments`, { email }));
              if (ok) {
                setEmail('');
                refreshed();
              }
            }}
          >
            <h3 id="enroll-title">Enroll a contact</h3>
            <label for="enroll-email">Contact’s email address</label>
            <input
              id="enroll-email"
              type="email"
              required
              aria-describedby="enroll-help"
              value={email}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
            <p class="muted" id="enroll-help">
              The address of one of your <a href={routeHref('/contacts')}>contacts</a>; step 1 is due{' '}
              {whenOf(s.steps[0]?.delayMinutes ?? 0, 0)}.
            </p>
            <Alert message={enrolling.error} />
            <button type="submit">Enroll</button>
          </form>
          <div class="filters">
            <label for="enr-state">State</label>
            <select
              id="enr-state"
              value={state}
              onChange={(e) => {
                setState(e.currentTarget.value);
                setPage(1);
              }}
            >
              <option value="">All</option>
              {ENROLLMENT_STATES.map((st) => (
                <option key={st} value={st}>
                  {st}
                </option>
              ))}
            </select>
          </div>
          <ListTable
            load={enrollments}
            items={enrollments.data?.data}
            what="enrollment lists"
            label="Enrollments"
            testId="enrollments"
            columns={['Contact', 'State', 'Next step', 'Enrolled', 'Action']}
            actionError={action.error}
            pager={pagerOf(enrollments.data?.meta, setPage, 'Enrollment pages')}
            empty={
              <EmptyState title={state ? `No ${state} enrollment.` : 'No contact enrolled yet.'}>
                <p>Enroll a contact above: the steps then go out to it one after the other.</p>
              </EmptyState>
            }
            row={(e) => (
              <tr key={e.id} data-id={e.id}>
                <th scope="row">{e.email ?? '(contact deleted)'}</th>
                <td>
                  <StatusBadge status={e.state} />
                  {e.stopReason && <span class="muted"> ({e.stopReason})</span>}
                </td>
                <td>
                  {e.state === 'active' && e.nextDueAt ? (
                    <>
                      Step {e.nextStep + 1} at <time dateTime={e.nextDueAt}>{formatDate(e.nextDueAt)}</time>
                    </>
                  ) : (
                    '—'
                  )}
                </td>
                <td>
                  <time dateTime={e.enrolledAt}>{formatDate(e.enrolledAt)}</time>
                </td>
                <td>
                  {e.state === 'active' && (
                    <button
                      type="button"
                      class="secondary"
                      aria-label={`Stop ${e.email ?? e.contactId}`}
                      onClick={async () => {
                        await action.run(() => del(`${path}/enrollments/${encodeURIComponent(e.id)}`));
                        refreshed();
                      }}
                    >
                      Stop
                    </button>
                  )}
                </td>
              </tr>
            )}
          />
        </div>
      )}
    </Page>
  );
}
