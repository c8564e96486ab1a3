import { useState } from 'preact/hooks';
import { del, patch, post } from '../api.js';
import { DeleteButton, DetailPage, EditToggle, IdField, useDetail } from '../kit/detail.js';
import { JsonField, JsonNote, useProperties, WrittenAs } from '../kit/editor.js';
import { Field, PanelForm } from '../kit/form.js';
import { listRoutes, usePagedList } from '../kit/list-page.js';
import { navigate, routeHref } from '../router.js';
import { EmptyState, ListTable, TimeCell } from '../table.js';
import type { Contact, Segment, SegmentFilter } from '../types.js';
import { Alert, formatDate, formatNumber, useActionError } from '../ui.js';
import { ClauseEditor, LiveCount } from './segment-builder.js';
import { type Clause, emptyClause, filterOf, readFilter } from './segment-clauses.js';

/** SPEC §27 segments: `#/segments` (list), `#/segments/new` (builder), `#/segments/<id>` (members). */
export const SegmentsPage = listRoutes<Segment>(
  'segment',
  {
    columns: ['Name', 'Filter', 'Created'],
    help: (
      <>
        A segment is a filter over your contacts — their properties, audiences, topics and what they did
        (opened in the last 30 days…), counted live. <a href={routeHref('/segments/new')}>Build one</a>: a
        campaign can then go to it.
      </>
    ),
    cells: (s) => (
      <>
        <td>
          <code class="wrap">{JSON.stringify(s.filter)}</code>
        </td>
        <TimeCell at={s.createdAt} />
      </>
    ),
  },
  SegmentEditor,
  SegmentDetail,
);

/**
 * The builder: conditions (or the filter as JSON), the live count, and save. An existing segment
 * opens in the conditions when they can write its filter, else as JSON with why.
 */
function SegmentEditor({ existing, onSaved }: { existing?: Segment; onSaved: (s: Segment) => void }) {
  const properties = useProperties();
  const [name, setName] = useState(existing?.name ?? '');
  const [read] = useState(() =>
    existing ? readFilter(existing.filter) : { clauses: [emptyClause()], match: 'and' as const },
  );
  const [mode, setMode] = useState<'conditions' | 'json'>('reason' in read ? 'json' : 'conditions');
  const [note, setNote] = useState('reason' in read ? read.reason : undefined);
  const [clauses, setClauses] = useState<Clause[]>('clauses' in read ? read.clauses : [emptyClause()]);
  const [match, setMatch] = useState<'and' | 'or'>('match' in read ? read.match : 'and');
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
    <PanelForm
      id="seg-form"
      title={existing ? 'Edit the segment' : 'Segment'}
      submit={existing ? 'Save segment' : 'Create segment'}
      error={saving.error}
      onSubmit={async () => {
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
      <Field id="seg-name" label="Segment name" required maxLength={100} value={name} onInput={setName} />
      <WrittenAs
        legend="Filter written as"
        formLabel="Conditions"
        json={mode === 'json'}
        onForm={() => {
          // The JSON written so far, in the conditions when they can write it. When they cannot, it
          // stays JSON (with why): the conditions would start empty and a save would lose it.
          if (mode === 'json' && json.trim() !== '') {
            const read = filter === null ? { reason: 'The filter is not valid JSON.' } : readFilter(filter);
            if ('reason' in read) {
              setNote(read.reason);
              return;
            }
            setClauses(read.clauses);
            setMatch(read.match);
          }
          setNote(undefined);
          setMode('conditions');
        }}
        onJson={() => {
          if (mode === 'conditions' && filter !== null) setJson(JSON.stringify(filter, null, 2));
          setMode('json');
        }}
      />
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
          <JsonNote note={note} />
          <JsonField id="seg-json" label="Filter (JSON)" rows={8} value={json} onInput={setJson}>
            <code>{'{ and: [...] }'}</code>, <code>{'{ or: [...] }'}</code>, <code>{'{ not: … }'}</code>,{' '}
            <code>{'{ property, op, value }'}</code>, <code>{'{ audience }'}</code>,{' '}
            <code>{'{ topic }'}</code>, <code>{'{ engagement, days }'}</code>, <code>{'{ tag }'}</code>,{' '}
            <code>{'{ campaign }'}</code>.
          </JsonField>
          <Alert message={jsonError} />
        </>
      )}
      <LiveCount filter={filter} />
    </PanelForm>
  );
}

function SegmentDetail({ id }: { id: string }) {
  const { path, load: segment } = useDetail<Segment>('segments', id);
  const members = usePagedList<Contact>(`${path}/contacts`, 'Member pages');
  const [editing, setEditing] = useState(false);
  const action = useActionError();
  return (
    <DetailPage load={segment} noun="Segment" list="segments">
      {(s) => (
        <>
          <dl class="fields">
            <dt>Filter</dt>
            <dd>
              <code class="wrap" data-testid="segment-filter">
                {JSON.stringify(s.filter)}
              </code>
            </dd>
            <dt>Contacts matching now</dt>
            <dd data-testid="segment-total">
              {members.list.data ? formatNumber(members.list.data.meta.total) : '…'}
            </dd>
            <IdField id={s.id} />
          </dl>
          <div class="row">
            <EditToggle editing={editing} setEditing={setEditing} label="Edit segment" />
            <DeleteButton
              label="Delete segment"
              confirm="Delete this segment"
              onConfirm={async (close) => {
                close();
                if (await action.run(() => del(path))) navigate('/segments');
              }}
            />
          </div>
          <Alert message={action.error} />
          {editing && (
            <SegmentEditor
              existing={s}
              onSaved={() => {
                setEditing(false);
                segment.reload();
                members.list.reload();
              }}
            />
          )}
          <h2>Members</h2>
          <ListTable
            {...members.table}
            what="segment members"
            label="Contacts of the segment"
            testId="members"
            columns={['Email', 'Name', 'Subscribed', 'Created']}
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
        </>
      )}
    </DetailPage>
  );
}
