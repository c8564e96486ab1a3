import { useState } from 'preact/hooks';
import { del, get, patch, post, query } from '../api.js';
import { TenantWide } from '../project.js';
import { navigate, routeHref } from '../router.js';
import { EmptyState, ListTable, pagerOf } from '../table.js';
import type { Contact, ContactProperty, List, Segment, SegmentFilter } from '../types.js';
import {
  Alert,
  ConfirmButtons,
  ErrorNotice,
  formatDate,
  formatNumber,
  Loading,
  Page,
  useActionError,
  useLoad,
} from '../ui.js';
import { type Clause, ClauseEditor, emptyClause, filterOf, LiveCount } from './segment-builder.js';

/** SPEC §27 segments: `#/segments` (list), `#/segments/new` (builder), `#/segments/<id>` (members). */
export function SegmentsPage({ id }: { id: string }) {
  if (id === '') return <SegmentList />;
  if (id === 'new')
    return (
      <Page title="New segment" actions={<a href={routeHref('/segments')}>← Segments</a>}>
        <SegmentEditor onSaved={(s) => navigate(`/segments/${encodeURIComponent(s.id)}`)} />
      </Page>
    );
  return <SegmentDetail id={id} />;
}

function SegmentList() {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => get<List<Segment>>(`/segments${query({ page, limit: 20 })}`).then((r) => r.body),
    [page],
  );
  return (
    <Page
      title="Segments"
      actions={
        <a class="button" href={routeHref('/segments/new')}>
          New segment
        </a>
      }
    >
      <TenantWide what="Segments" />
      <ListTable
        load={list}
        items={list.data?.data}
        what="segments"
        label="Segments"
        testId="segments"
        columns={['Name', 'Filter', 'Created']}
        pager={pagerOf(list.data?.meta, setPage, 'Segment pages')}
        empty={
          <EmptyState title="No segment yet.">
            <p>
              A segment is a filter over your contacts — their properties, audiences, topics and what they did
              (opened in the last 30 days…), counted live. <a href={routeHref('/segments/new')}>Build one</a>:
              a campaign can then go to it.
            </p>
          </EmptyState>
        }
        row={(s) => (
          <tr key={s.id} data-id={s.id}>
            <th scope="row">
              <a href={routeHref(`/segments/${encodeURIComponent(s.id)}`)}>{s.name}</a>
            </th>
            <td>
              <code class="wrap">{JSON.stringify(s.filter)}</code>
            </td>
            <td>
              <time dateTime={s.createdAt}>{formatDate(s.createdAt)}</time>
            </td>
          </tr>
        )}
      />
    </Page>
  );
}

/** The builder: conditions (or the filter as JSON), the live count, and save. */
function SegmentEditor({ existing, onSaved }: { existing?: Segment; onSaved: (s: Segment) => void }) {
  const properties = useLoad(
    () => get<{ data: ContactProperty[] }>('/contact-properties').then((r) => r.body.data),
    [],
  );
  const [name, setName] = useState(existing?.name ?? '');
  const [mode, setMode] = useState<'conditions' | 'json'>(existing ? 'json' : 'conditions');
  const [clauses, setClauses] = useState<Clause[]>([emptyClause()]);
  const [match, setMatch] = useState<'and' | 'or'>('and');
  const [json, setJson] = useState(existing ? JSON.stringify(existing.filter, null, 2) : '');
  const saving = useActionError();
  const types = new Map((properties.data ?? []).map((p) => [p.name, p.type]));

  let filter: SegmentFilter | null = null;
  let jsonError: string | undefined;
  if (mode === 'conditions') filter = filterOf(clauses, match, types);
  else if (json.trim() !== '') {
    try {
      filter = JSON.parse(json) as SegmentFilter;
    } catch {
      jsonError = 'The filter is not valid JSON.';
    }
  }

  return (
    <form
      class="panel"
      aria-labelledby="seg-form"
      onSubmit={async (e) => {
        e.preventDefault();
        if (filter === null) {
          saving.setError(jsonError ?? 'Complete the conditions first.');
          return;
        }
        const body = { name, filter };
        await saving.run(async () => {
          const res = existing
            ? await patch<Segment>(`/segments/${encodeURIComponent(existing.id)}`, body)
            : await post<Segment>('/segments', body);
          onSaved(res.body);
        });
      }}
    >
      <h2 id="seg-form">{existing ? 'Edit the segment' : 'Segment'}</h2>
      <label for="seg-name">Segment name</label>
      <input
        id="seg-name"
        required
        maxLength={100}
        value={name}
        onInput={(e) => setName(e.currentTarget.value)}
      />
      <fieldset class="segmented">
        <legend>Filter written as</legend>
        <button type="button" aria-pressed={mode === 'conditions'} onClick={() => setMode('conditions')}>
          Conditions
        </button>
        <button
          type="button"
          aria-pressed={mode === 'json'}
          onClick={() => {
            if (mode === 'conditions' && filter !== null) setJson(JSON.stringify(filter, null, 2));
            setMode('json');
          }}
        >
          JSON
        </button>
      </fieldset>
      {mode === 'conditions' ? (
        <ClauseEditor
          clauses={clauses}
          setClauses={setClauses}
          match={match}
          setMatch={setMatch}
          properties={properties.data}
        />
      ) : (
        <>
          <label for="seg-json">Filter (JSON)</label>
          <textarea
            id="seg-json"
            rows={8}
            spellcheck={false}
            aria-describedby="seg-json-help"
            value={json}
            onInput={(e) => setJson(e.currentTarget.value)}
          />
          <p class="muted" id="seg-json-help">
            <code>{'{ and: [...] }'}</code>, <code>{'{ or: [...] }'}</code>, <code>{'{ not: … }'}</code>,{' '}
            <code>{'{ property, op, value }'}</code>, <code>{'{ audience }'}</code>,{' '}
            <code>{'{ topic }'}</code>, <code>{'{ engagement, days }'}</code>, <code>{'{ tag }'}</code>,{' '}
            <code>{'{ campaign }'}</code>.
          </p>
          <Alert message={jsonError} />
        </>
      )}
      <LiveCount filter={filter} />
      <Alert message={saving.error} />
      <button type="submit">{existing ? 'Save segment' : 'Create segment'}</button>
    </form>
  );
}

function SegmentDetail({ id }: { id: string }) {
  const path = `/segments/${encodeURIComponent(id)}`;
  const segment = useLoad(() => get<Segment>(path).then((r) => r.body), [path]);
  const [page, setPage] = useState(1);
  const members = useLoad(
    () => get<List<Contact>>(`${path}/contacts${query({ page, limit: 20 })}`).then((r) => r.body),
    [path, page],
  );
  const [editing, setEditing] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const action = useActionError();
  const s = segment.data;
  return (
    <Page
      title={s ? `Segment ${s.name}` : 'Segment'}
      actions={<a href={routeHref('/segments')}>← Segments</a>}
    >
      {segment.error && <ErrorNotice error={segment.error} what="segments" />}
      {!s && segment.loading && <Loading />}
      {s && (
        <div data-testid="segment">
          <dl class="fields">
            <dt>Filter</dt>
            <dd>
              <code class="wrap" data-testid="segment-filter">
                {JSON.stringify(s.filter)}
              </code>
            </dd>
            <dt>Contacts matching now</dt>
            <dd data-testid="segment-total">{members.data ? formatNumber(members.data.meta.total) : '…'}</dd>
            <dt>Id</dt>
            <dd>
              <code>{s.id}</code>
            </dd>
          </dl>
          <div class="row">
            <button
              type="button"
              class="secondary"
              aria-expanded={editing}
              onClick={() => setEditing(!editing)}
            >
              {editing ? 'Close the editor' : 'Edit segment'}
            </button>
            {confirming ? (
              <ConfirmButtons
                label="Delete this segment"
                onConfirm={async () => {
                  setConfirming(false);
                  if (await action.run(() => del(path))) navigate('/segments');
                }}
                onKeep={() => setConfirming(false)}
              />
            ) : (
              <button type="button" class="secondary" onClick={() => setConfirming(true)}>
                Delete segment
              </button>
            )}
          </div>
          <Alert message={action.error} />
          {editing && (
            <SegmentEditor
              existing={s}
              onSaved={() => {
                setEditing(false);
                segment.reload();
                members.reload();
              }}
            />
          )}
          <h2>Members</h2>
          <ListTable
            load={members}
            items={members.data?.data}
            what="segment members"
            label="Contacts of the segment"
            testId="members"
            columns={['Email', 'Name', 'Subscribed', 'Created']}
            pager={pagerOf(members.data?.meta, setPage, 'Member pages')}
            empty={<EmptyState title="No contact matches this segment now." />}
            row={(c) => (
              <tr key={c.id} data-id={c.id}>
                <th scope="row">{c.email}</th>
                <td>{[c.firstName, c.lastName].filter(Boolean).join(' ') || '—'}</td>
                <td>{c.subscribed ? 'yes' : 'no'}</td>
                <td>
                  <time dateTime={c.createdAt}>{formatDate(c.createdAt)}</time>
                </td>
              </tr>
            )}
          />
        </div>
      )}
    </Page>
  );
}
