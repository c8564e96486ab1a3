import type { Automation, AutomationRun, AutomationStep, List } from '@tern/contracts/wire';
import {
  childListCall,
  hasState,
  hasSteps,
  isItemWith,
  isList,
  isRecord,
  type ResourceApi,
  resourceCalls,
} from './resource.js';
import type { Send } from './transport.js';
import type { RequestOptions } from './types.js';

// Automations (SPEC §27): `/automations`, their runs, and `POST /events/track` (`client.events.track`).

export type { Automation, AutomationFilter, AutomationRun, AutomationStep } from '@tern/contracts/wire';

export interface CreateAutomationParams {
  name: string;
  /** Required when a step sends. */
  from?: string;
  /** `contact.created`, `contact.updated`, a delivery event type, `email.received` or a custom event name. */
  trigger: { event: string };
  steps: AutomationStep[];
  /** Default true. */
  enabled?: boolean;
}

export interface UpdateAutomationParams {
  name?: string;
  from?: string;
  trigger?: { event: string };
  steps?: AutomationStep[];
  enabled?: boolean;
}

export type AutomationList = List<Automation>;

export type AutomationRunList = List<AutomationRun>;

export interface AutomationsApi
  extends ResourceApi<Automation, CreateAutomationParams, UpdateAutomationParams> {
  /** The automation's runs, newest first, optionally of one state. */
  runs(
    id: string,
    params?: { state?: AutomationRun['state']; page?: number; limit?: number },
    options?: RequestOptions,
  ): Promise<AutomationRunList>;
}

const isAutomation = isItemWith<Automation>(hasSteps);
const isRun = isItemWith<AutomationRun>(hasState);

export function createAutomationsApi(send: Send): AutomationsApi {
  return {
    ...resourceCalls(send, '/automations', isAutomation, isList(isAutomation)),
    runs: childListCall(send, '/automations', 'runs', isList(isRun)),
  };
}

/** `POST /events/track`: a custom event of a contact. */
export interface TrackEventParams {
  /** Address of an existing contact. */
  email: string;
  /** 1..100 of `A-Z a-z 0-9 _ . : -`, not starting with `email.`, `contact.` or `domain.`. */
  name: string;
  data?: Record<string, unknown>;
}

export interface TrackedEvent {
  id: string;
  name: string;
  contactId: string;
}

export const isTrackedEvent = (value: unknown): value is TrackedEvent =>
  isRecord(value) && typeof value.id === 'string' && typeof value.contactId === 'string';
