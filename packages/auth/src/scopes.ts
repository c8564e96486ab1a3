import { SCOPES, type Scope } from '@tern/contracts';

const KNOWN = new Set<string>(SCOPES);

export function isScope(s: string): s is Scope {
  return KNOWN.has(s);
}

/** Scopes are exact names: no wildcard and no implication (`email:send` does not grant `email:read`). */
export function hasScope(granted: readonly string[], required: Scope): boolean {
  return granted.includes(required);
}

/** The required scopes `granted` lacks, in the order asked; empty when all are present. */
export function missingScopes(granted: readonly string[], required: readonly Scope[]): Scope[] {
  return required.filter((scope) => !granted.includes(scope));
}
