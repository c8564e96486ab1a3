import { useState } from 'preact/hooks';
import { del, patch } from '../api.js';
import { DeleteButton, DetailPage, EditToggle, IdField, useDetail, useFollow } from '../kit/detail.js';
import { listRoutes, StateFilter, useStateList } from '../kit/list-page.js';
import { navigate, routeHref } from '../router.js';
import { EmptyState, ListTable, RowButton, TimeCell } from '../table.js';
import { AUTOMATION_RUN_STATES, type Automation, type AutomationRun } from '../types.js';
import { Alert, formatDate, formatNumber, StatusBadge, useActionError } from '../ui.js';
import { AutomationEditor } from './automation-editor.js';

const POLL_MS = 2000;
/** A page follows its runs this long after it opened or after the user's last action. */
const FOLLOW_MS = 5 * 60_000;

/** SPEC §27 automations: `#/automations` (list), `#/automations/new`, `#/automations/<id>` (runs). */
export const AutomationsPage = listRoutes<Automation>(
  'automation',
  {
    columns: ['Name', 'Trigger', 'State', 'Active', 'Completed', 'Stopped', 'Created', 'Action'],
    help: (
      <>
        An automation reacts to what a contact does — signs up, opens a mail, replies, or a custom event of
        your app — with steps: send, wait, branch, set a property.{' '}
        <a href={routeHref('/automations/new')}>Create one</a>.
      </>
    ),
    cells: (a, action) => (
      <>
        <td>
          <code>{a.trigger.event}</code>
        </td>
        <td>
          <StatusBadge status={a.enabled ? 'enabled' : 'disabled'} />
        </td>
        <td class="num">{formatNumber(a.runs.active)}</td>
        <td class="num">{formatNumber(a.runs.completed)}</td>
        <td class="num">{formatNumber(a.runs.stopped)}</td>
        <TimeCell at={a.createdAt} />
        <td>
          <RowButton
            label={`${a.enabled ? 'Disable' : 'Enable'} ${a.name}`}
            onClick={() =>
              action.act(() => patch(`/automations/${encodeURIComponent(a.id)}`, { enabled: !a.enabled }))
            }
          >
            {a.enabled ? 'Disable' : 'Enable'}
          </RowButton>
        </td>
      </>
    ),
  },
  AutomationEditor,
  AutomationDetail,
);

function AutomationDetail({ id }: { id: string }) {
  const { path, load: automation } = useDetail<Automation>('automations', id);
  const runs = useStateList<AutomationRun>(`${path}/runs`, 'Run pages', 'run-state', AUTOMATION_RUN_STATES);
  const { state } = runs;
  const [editing, setEditing] = useState(false);
  const action = useActionError();
  const { following, refreshed } = useFollow(POLL_MS, FOLLOW_MS, () => {
    automation.reload();
    runs.list.reload();
  });

  return (
    <DetailPage load={automation} noun="Automation" list="automations">
      {(a) => (
        <>
          <dl class="fields">
            <dt>Trigger</dt>
            <dd>
              <code>{a.trigger.event}</code>
            </dd>
            <dt>State</dt>
            <dd data-testid="automation-state">{a.enabled ? 'enabled' : 'disabled (starts no run)'}</dd>
            <dt>From</dt>
            <dd>{a.from ?? '—'}</dd>
            <dt>Runs</dt>
            <dd data-testid="run-counts">
              {a.runs.active} active, {a.runs.completed} completed, {a.runs.stopped} stopped
            </dd>
            <IdField id={a.id} />
          </dl>
          <h2>Steps</h2>
          <pre class="wrap" data-testid="automation-steps">
            {JSON.stringify(a.steps, null, 2)}
          </pre>
          <div class="row">
            <button
              type="button"
              onClick={async () => {
                await action.run(() => patch(path, { enabled: !a.enabled }));
                refreshed();
              }}
            >
              {a.enabled ? 'Disable automation' : 'Enable automation'}
            </button>
            <EditToggle editing={editing} setEditing={setEditing} label="Edit automation" />
            <button type="button" class="secondary" onClick={refreshed}>
              Refresh
            </button>
            <DeleteButton
              label="Delete automation"
              confirm="Delete this automation and its runs"
              onConfirm={async (close) => {
                close();
                if (await action.run(() => del(path))) navigate('/automations');
              }}
            />
            {following && <span class="muted">Updating every {POLL_MS / 1000} s.</span>}
          </div>
          <Alert message={action.error} />
          {editing && (
            <AutomationEditor
              existing={a}
              onSaved={() => {
                setEditing(false);
                refreshed();
              }}
            />
          )}
          <h2 id="runs">Runs</h2>
          <StateFilter {...runs.filter} />
          <ListTable
            {...runs.table}
            what="automation runs"
            label="Runs"
            testId="runs"
            columns={['Contact', 'State', 'Position', 'Waiting for', 'Next move', 'Steps done', 'Started']}
            empty={
              <EmptyState title={state ? `No ${state} run.` : 'No run yet.'}>
                <p>
                  Each <code>{a.trigger.event}</code> of a contact starts a run (one at a time per contact)
                  {a.enabled ? '.' : ' once the automation is enabled.'}
                </p>
              </EmptyState>
            }
            row={(r) => (
              <tr key={r.id} data-id={r.id}>
                <th scope="row">{r.email ?? '(contact deleted)'}</th>
                <td>
                  <StatusBadge status={r.state} />
                  {r.stopReason && <span class="muted"> ({r.stopReason})</span>}
                </td>
                <td>{r.position ?? '—'}</td>
                <td>{r.waiting ?? '—'}</td>
                <td>{r.dueAt ? <time dateTime={r.dueAt}>{formatDate(r.dueAt)}</time> : '—'}</td>
                <td class="num">{r.stepsDone}</td>
                <td>
                  <time dateTime={r.startedAt}>{formatDate(r.startedAt)}</time>
                </td>
              </tr>
            )}
          />
        </>
      )}
    </DetailPage>
  );
}
