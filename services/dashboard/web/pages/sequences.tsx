import { listRoutes } from '../kit/list-page.js';
import { routeHref } from '../router.js';
import { TimeCell } from '../table.js';
import type { Sequence } from '../types.js';
import { formatNumber } from '../ui.js';
import { SequenceDetail } from './sequence-detail.js';
import { SequenceEditor } from './sequence-editor.js';

/** SPEC §15 sequences: `#/sequences` (list), `#/sequences/new`, `#/sequences/<id>`. */
export const SequencesPage = listRoutes<Sequence>(
  'sequence',
  {
    columns: ['Name', 'Steps', 'Active', 'Completed', 'Stopped', 'Created'],
    help: (
      <>
        A sequence sends its steps to each contact you enroll, each step a delay after the previous one (a
        drip: welcome now, tips in two days…). <a href={routeHref('/sequences/new')}>Create one</a>, then
        enroll contacts from the <a href={routeHref('/contacts')}>Contacts</a> you have.
      </>
    ),
    cells: (s) => (
      <>
        <td class="num">{s.steps.length}</td>
        <td class="num">{formatNumber(s.enrollments.active)}</td>
        <td class="num">{formatNumber(s.enrollments.completed)}</td>
        <td class="num">{formatNumber(s.enrollments.stopped + s.enrollments.cancelled)}</td>
        <TimeCell at={s.createdAt} />
      </>
    ),
  },
  SequenceEditor,
  SequenceDetail,
);
