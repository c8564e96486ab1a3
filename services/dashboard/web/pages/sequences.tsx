import { ListPage, ListRoutes, usePagedList } from '../kit/list-page.js';
import { routeHref } from '../router.js';
import { EmptyState, ListTable } from '../table.js';
import type { Sequence } from '../types.js';
import { formatDate, formatNumber } from '../ui.js';
import { SequenceDetail } from './sequence-detail.js';
import { SequenceEditor } from './sequence-editor.js';

/** SPEC §15 sequences: `#/sequences` (list), `#/sequences/new`, `#/sequences/<id>`. */
export function SequencesPage({ id }: { id: string }) {
  return (
    <ListRoutes
      id={id}
      list="sequences"
      noun="sequence"
      List={SequenceList}
      Editor={SequenceEditor}
      Detail={SequenceDetail}
    />
  );
}

function SequenceList() {
  const { table } = usePagedList<Sequence>('/sequences', 'Sequence pages');
  return (
    <ListPage title="Sequences" newHref="/sequences/new" newLabel="New sequence">
      <ListTable
        {...table}
        what="sequences"
        label="Sequences"
        testId="sequences"
        columns={['Name', 'Steps', 'Active', 'Completed', 'Stopped', 'Created']}
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
    </ListPage>
  );
}
