import type { SCOPES as CONTRACT_SCOPES } from '@tern/contracts';
import type { SCOPES } from '../web/types.js';

// The dashboard keeps its own list of scopes (the browser bundle imports nothing of the server's
// packages that would pull zod in), checked here against the contracts at compile time:
// `npm run typecheck` fails when a scope is added to one and not the other. Types only: nothing of
// this reaches the bundle. Its event types come from `@tern/contracts/event-types` itself.

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;

export type ScopesMatchTheContracts = Assert<Same<(typeof SCOPES)[number], (typeof CONTRACT_SCOPES)[number]>>;
