import { useState } from 'preact/hooks';
import { del, get, post, query } from '../api.js';
import { routeHref } from '../router.js';
import { EmptyState, ListTable, pagerOf, TableWrap } from '../table.js';
import { ENROLLMENT_STATES, type Enrollment, type List, type Sequence } from '../types.js';
import {
  Alert,
  ErrorNotice,
  formatDate,
  formatDelay,
  Loading,
  Page,
  StatusBadge,
  useActionError,
  useLoad,
  usePoll,
} from '../ui.js';
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

export function SequenceDetail({ id }: { id: string }) {
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
