import { useState } from 'preact/hooks';
import { get, query } from '../api.js';
import { TenantWide } from '../project.js';
import { navigate, routeHref } from '../router.js';
import { EmptyState, ListTable, pagerOf } from '../table.js';
import type { List, Sequence } from '../types.js';
import { formatDate, formatNumber, Page, useLoad } from '../ui.js';
import { SequenceDetail } from './sequence-detail.js';
import { SequenceEditor } from './sequence-editor.js';

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
