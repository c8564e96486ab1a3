import { useState } from 'preact/hooks';
import { del, get, patch, query } from '../api.js';
import { TenantWide } from '../project.js';
import { navigate, routeHref } from '../router.js';
import { EmptyState, ListTable, pagerOf } from '../table.js';
import { AUTOMATION_RUN_STATES, type Automation, type AutomationRun, type List } from '../types.js';
import {
  Alert,
  ConfirmButtons,
  ErrorNotice,
  formatDate,
  formatNumber,
  Loading,
  Page,
  StatusBadge,
  useActionError,
  useLoad,
  usePoll,
} from '../ui.js';
import { AutomationEditor } from './automation-editor.js';

const POLL_MS = 2000;
/** A page follows its runs this long after it opened or after the user's last action. */
const FOLLOW_MS = 5 * 60_000;

/** SPEC §27 automations: `#/automations` (list), `#/automations/new`, `#/automations/<id>` (runs). */
export function AutomationsPage({ id }: { id: string }) {
  if (id === '') return <AutomationList />;
  if (id === 'new')
    return (
      <Page title="New automation" actions={<a href={routeHref('/automations')}>← Automations</a>}>
        <AutomationEditor onSaved={(a) => navigate(`/automations/${encodeURIComponent(a.id)}`)} />
      </Page>
    );
  return <AutomationDetail id={id} />;
}

function AutomationList() {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => get<List<Automation>>(`/automations${query({ page, limit: 20 })}`).then((r) => r.body),
    [page],
  );
  const action = useActionError();
  return (
    <Page
      title="Automations"
      actions={
        <a class="button" href={routeHref('/automations/new')}>
          New automation
        </a>
      }
    >
      <TenantWide what="Automations" />
      <ListTable
        load={list}
        items={list.data?.data}
        what="automations"
        label="Automations"
        testId="automations"
        columns={['Name', 'Trigger', 'State', 'Active', 'Completed', 'Stopped', 'Created', 'Action']}
        actionError={action.error}
        pager={pagerOf(list.data?.meta, setPage, 'Automation pages')}
        empty={
          <EmptyState title="No automation yet.">
            <p>
              An automation reacts to what a contact does — signs up, opens a mail, replies, or a custom event
              of your app — with steps: send, wait, branch, set a property.{' '}
              <a href={routeHref('/automations/new')}>Create one</a>.
            </p>
          </EmptyState>
        }
        row={(a) => (
          <tr key={a.id} data-id={a.id}>
            <th scope="row">
              <a href={routeHref(`/automations/${encodeURIComponent(a.id)}`)}>{a.name}</a>
            </th>
            <td>
              <code>{a.trigger.event}</code>
            </td>
            <td>
              <StatusBadge status={a.enabled ? 'enabled' : 'disabled'} />
            </td>
            <td class="num">{formatNumber(a.runs.active)}</td>
            <td class="num">{formatNumber(a.runs.completed)}</td>
            <td class="num">{formatNumber(a.runs.stopped)}</td>
            <td>
              <time dateTime={a.createdAt}>{formatDate(a.createdAt)}</time>
            </td>
            <td>
              <button
                type="button"
                class="secondary"
                aria-label={`${a.enabled ? 'Disable' : 'Enable'} ${a.name}`}
                onClick={async () => {
                  await action.run(() =>
                    patch(`/automations/${encodeURIComponent(a.id)}`, { enabled: !a.enabled }),
                  );
                  list.reload();
                }}
              >
                {a.enabled ? 'Disable' : 'Enable'}
              </button>
            </td>
          </tr>
        )}
      />
    </Page>
  );
}

function AutomationDetail({ id }: { id: string }) {
  const path = `/automations/${encodeURIComponent(id)}`;
  const automation = useLoad(() => get<Automation>(path).then((r) => r.body), [path]);
  const [page, setPage] = useState(1);
  const [state, setState] = useState('');
  const runs = useLoad(
    () => get<List<AutomationRun>>(`${path}/runs${query({ page, limit: 20, state })}`).then((r) => r.body),
    [path, page, state],
  );
  const [editing, setEditing] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const action = useActionError();
  const [followFrom, setFollowFrom] = useState(() => Date.now());
  const following = Date.now() - followFrom < FOLLOW_MS;
  usePoll(following, POLL_MS, () => {
    automation.reload();
    runs.reload();
  });
  const refreshed = () => {
    setFollowFrom(Date.now());
    automation.reload();
    runs.reload();
  };

  const a = automation.data;
  return (
    <Page
      title={a ? `Automation ${a.name}` : 'Automation'}
      actions={<a href={routeHref('/automations')}>← Automations</a>}
    >
      {automation.error && <ErrorNotice error={automation.error} what="automations" />}
      {!a && automation.loading && <Loading />}
      {a && (
        <div data-testid="automation">
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
            <dt>Id</dt>
            <dd>
              <code>{a.id}</code>
            </dd>
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
            <button
              type="button"
              class="secondary"
              aria-expanded={editing}
              onClick={() => setEditing(!editing)}
            >
              {editing ? 'Close the editor' : 'Edit automation'}
            </button>
            <button type="button" class="secondary" onClick={refreshed}>
              Refresh
            </button>
            {confirming ? (
              <ConfirmButtons
                label="Delete this automation and its runs"
                onConfirm={async () => {
                  setConfirming(false);
                  if (await action.run(() => del(path))) navigate('/automations');
                }}
                onKeep={() => setConfirming(false)}
              />
            ) : (
              <button type="button" class="secondary" onClick={() => setConfirming(true)}>
                Delete automation
              </button>
            )}
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
          <div class="filters">
            <label for="run-state">State</label>
            <select
              id="run-state"
              value={state}
              onChange={(e) => {
                setState(e.currentTarget.value);
                setPage(1);
              }}
            >
              <option value="">All</option>
              {AUTOMATION_RUN_STATES.map((st) => (
                <option key={st} value={st}>
                  {st}
                </option>
              ))}
            </select>
          </div>
          <ListTable
            load={runs}
            items={runs.data?.data}
            what="automation runs"
            label="Runs"
            testId="runs"
            columns={['Contact', 'State', 'Position', 'Waiting for', 'Next move', 'Steps done', 'Started']}
            pager={pagerOf(runs.data?.meta, setPage, 'Run pages')}
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
        </div>
      )}
    </Page>
  );
}
