import type { Enrollment, List, Sequence } from '@tern/contracts/wire';
import {
  childListCall,
  hasState,
  hasSteps,
  isItemWith,
  isList,
  itemPath,
  json,
  type ResourceApi,
  resourceCalls,
} from './resource.js';
import type { Send } from './transport.js';
import type { RequestOptions } from './types.js';

export type { Enrollment, Sequence, SequenceStep } from '@tern/contracts/wire';

/** One step: sent `delayMinutes` after the previous one (after enrollment for the first). */
export interface SequenceStepParams {
  delayMinutes: number;
  templateId?: string;
  subject?: string;
  html?: string;
  text?: string;
}

export interface CreateSequenceParams {
  name: string;
  from: string;
  /** A topic of the tenant (SPEC §27): a contact that opted out stops (`unsubscribed`). */
  topic?: string;
  /** 1..20 steps. */
  steps: SequenceStepParams[];
}

export type SequenceList = List<Sequence>;

/** Fields to change; `steps` replaces the list (enrollments keep their place). */
export interface UpdateSequenceParams {
  name?: string;
  from?: string;
  topic?: string | null;
  steps?: SequenceStepParams[];
}

export type EnrollmentList = List<Enrollment>;

/** The resource calls but `remove` (the API has no `DELETE /sequences/:id`). */
export interface SequencesApi
  extends Omit<ResourceApi<Sequence, CreateSequenceParams, UpdateSequenceParams>, 'remove'> {
  /** The sequence's enrollments, newest first, optionally of one state. */
  enrollments(
    id: string,
    params?: { state?: Enrollment['state']; page?: number; limit?: number },
    options?: RequestOptions,
  ): Promise<EnrollmentList>;
  /** Enrolls the tenant's contact with this address (it must exist). */
  enroll(id: string, params: { email: string }, options?: RequestOptions): Promise<Enrollment>;
  /** Stops an enrollment: no further step is sent. */
  unenroll(id: string, enrollmentId: string, options?: RequestOptions): Promise<void>;
}

const isSequence = isItemWith<Sequence>(hasSteps);
const isEnrollment = isItemWith<Enrollment>(hasState);

export function createSequencesApi(send: Send): SequencesApi {
  const path = itemPath('/sequences');
  const { create, list, get, update } = resourceCalls(send, '/sequences', isSequence, isList(isSequence));
  return {
    create,
    list,
    get,
    update,
    enrollments: childListCall(send, '/sequences', 'enrollments', isList(isEnrollment)),
    enroll: (id, params, options = {}) =>
      send(`${path(id)}/enrollments`, {}, { ...json('POST', params), check: isEnrollment }, options),
    unenroll: (id, enrollmentId, options = {}) =>
      send<void>(
        `${path(id)}/enrollments/${encodeURIComponent(enrollmentId)}`,
        {},
        { method: 'DELETE', read: 'none' },
        options,
      ),
  };
}
