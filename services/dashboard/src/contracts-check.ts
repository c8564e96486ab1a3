import type { SCOPES as CONTRACT_SCOPES, WEBHOOK_EVENT_TYPES } from '@tern/contracts';
import type { EVENT_TYPES, SCOPES } from '../web/types.js';

// The dashboard keeps its own lists (the browser bundle imports nothing of the server's packages),
// checked here against the contracts at compile time: `npm run typecheck` fails when a scope or an
// event type is added to one and not the other. Types only: nothing of this reaches the bundle.

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;

export type ScopesMatchTheContracts = Assert<Same<(typeof SCOPES)[number], (typeof CONTRACT_SCOPES)[number]>>;
export type EventTypesMatchTheContracts = Assert<
  Same<(typeof EVENT_TYPES)[number], (typeof WEBHOOK_EVENT_TYPES)[number]>
>;
