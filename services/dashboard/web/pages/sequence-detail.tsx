import { useState } from 'preact/hooks';
import { del, post } from '../api.js';
import { DetailPage, EditToggle, IdField, useDetail, useFollow } from '../kit/detail.js';
import { type Column, FiguresTable, num } from '../kit/figures-table.js';
import { StateFilter, useStateList } from '../kit/list-page.js';
import { routeHref } from '../router.js';
import { EmptyState, ListTable, RowButton } from '../table.js';
import { ENROLLMENT_STATES, type Enrollment, type Sequence } from '../types.js';
import { Alert, formatDate, formatDelay, StatusBadge, useActionError } from '../ui.js';
import { SequenceEditor } from './sequence-editor.js';

const POLL_MS = 2000;
/** A page follows its sequence's mail this long after it opened or after the user's last action. */
const FOLLOW_MS = 5 * 60_000;

/** When step `i` (0-based) falls due, in words: "at enrollment", "1 day after step 2". */
const whenOf = (delayMinutes: number, i: number) =>
  delayMinutes === 0
    ? i === 0
      ? 'at enrollment'
      : `with step ${i}`
    : `${formatDelay(delayMinutes)} after ${i === 0 ? 'enrollment' : `step ${i}`}`;

type Step = Sequence['steps'][number];
const stat = (key: keyof Step['stats'], label: string) => num<Step>(label, (step) => step.stats[key], key);
const STEP_COLUMNS: Column<Step>[] = [
  { label: 'Step', cell: (_, i) => i + 1 },
  { label: 'When', cell: (step, i) => whenOf(step.delayMinutes, i) },
  {
    label: 'Subject',
    cell: (step) => step.subject ?? (step.templateId ? `template ${step.templateId}` : '—'),
  },
  stat('recipients', 'Recipients'),
  stat('sent', 'Sent'),
  stat('delivered', 'Delivered'),
  stat('opened', 'Opened'),
  stat('clicked', 'Clicked'),
  stat('bounced', 'Bounced'),
  stat('unsubscribed', 'Unsubscribed'),
];

export function SequenceDetail({ id }: { id: string }) {
  const { path, load: sequence } = useDetail<Sequence>('sequences', id);
  const enrollments = useStateList<Enrollment>(
    `${path}/enrollments`,
    'Enrollment pages',
    'enr-state',
    ENROLLMENT_STATES,
  );
  const { state } = enrollments;
  const [editing, setEditing] = useState(false);
  const [email, setEmail] = useState('');
  const enrolling = useActionError();
  const action = useActionError();
  // Follow the mail for a while after the page opened or the last action: steps fall due and their
  // figures move without a reload.
  const { following, refreshed } = useFollow(POLL_MS, FOLLOW_MS, () => {
    sequence.reload();
    enrollments.list.reload();
  });

  return (
    <DetailPage load={sequence} noun="Sequence" list="sequences">
      {(s) => (
        <>
          <dl class="fields">
            <dt>From</dt>
            <dd>{s.from}</dd>
            <dt>Enrollments</dt>
            <dd data-testid="enrollment-counts">
              {s.enrollments.active} active, {s.enrollments.completed} completed, {s.enrollments.stopped}{' '}
              stopped, {s.enrollments.cancelled} cancelled
            </dd>
            <IdField id={s.id} />
          </dl>
          <h2>Steps</h2>
          <FiguresTable
            label="Steps and their figures"
            testId="steps"
            columns={STEP_COLUMNS}
            rows={s.steps}
            rowKey={(_, i) => i}
            rowAttrs={(_, i) => ({ 'data-step': i + 1 })}
          />
          <div class="row">
            <EditToggle editing={editing} setEditing={setEditing} label="Edit steps" />
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
          <StateFilter {...enrollments.filter} />
          <ListTable
            {...enrollments.table}
            what="enrollment lists"
            label="Enrollments"
            testId="enrollments"
            columns={['Contact', 'State', 'Next step', 'Enrolled', 'Action']}
            actionError={action.error}
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
                    <RowButton
                      label={`Stop ${e.email ?? e.contactId}`}
                      onClick={async () => {
                        await action.run(() => del(`${path}/enrollments/${encodeURIComponent(e.id)}`));
                        refreshed();
                      }}
                    >
                      Stop
                    </RowButton>
                  )}
                </td>
              </tr>
            )}
          />
        </>
      )}
    </DetailPage>
  );
}
