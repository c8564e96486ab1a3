/**
 * The dashboard session is the tenant's JWT (SPEC §18): taken from `#token=` once, kept in
 * sessionStorage (gone with the tab), sent as `Authorization: Bearer`. The claims are read only
 * to label the page and hide admin actions; the API verifies the token on every request.
 */
const KEY = 'tern.jwt';

export type Role = 'owner' | 'admin' | 'member';

export interface Session {
  token: string;
  tenantId: string;
  role: Role;
  sub: string | undefined;
  /** Seconds since the epoch. */
  exp: number;
}

function decodePart(part: string): unknown {
  const b64 = part.replace(/-/g, '+').replace(/_/g, '/');
  const bytes = Uint8Array.from(atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4)), (c) => c.charCodeAt(0));
  return JSON.parse(new TextDecoder().decode(bytes));
}

/** The session a token describes, or the reason it cannot be one. */
export function parseToken(raw: string): Session | string {
  const token = raw.trim();
  const parts = token.split('.');
  if (parts.length !== 3) return 'This is not a JWT (three dot-separated parts).';
  let claims: Record<string, unknown>;
  try {
    claims = decodePart(parts[1]!) as Record<string, unknown>;
  } catch {
    return 'This token cannot be read.';
  }
  if (typeof claims.tenantId !== 'string' || claims.tenantId === '') return 'The token names no tenant.';
  if (typeof claims.exp !== 'number') return 'The token has no expiry.';
  if (claims.exp * 1000 <= Date.now()) return 'The token has expired.';
  const role = claims.role === 'owner' || claims.role === 'admin' ? claims.role : 'member';
  return {
    token,
    tenantId: claims.tenantId,
    role,
    sub: typeof claims.sub === 'string' ? claims.sub : undefined,
    exp: claims.exp,
  };
}

/** Takes `#token=…` out of the address (so it is not bookmarked or shared) into the session. */
export function adoptFragmentToken(): string | undefined {
  const hash = window.location.hash;
  if (!hash.startsWith('#token=')) return undefined;
  const token = decodeURIComponent(hash.slice('#token='.length));
  window.history.replaceState(null, '', `${window.location.pathname}${window.location.search}#/`);
  const session = parseToken(token);
  if (typeof session === 'string') return session;
  sessionStorage.setItem(KEY, session.token);
  return undefined;
}

export function loadSession(): Session | undefined {
  const token = sessionStorage.getItem(KEY);
  if (!token) return undefined;
  const session = parseToken(token);
  if (typeof session === 'string') {
    sessionStorage.removeItem(KEY);
    return undefined;
  }
  return session;
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(KEY, session.token);
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
}

export const isAdmin = (s: Session) => s.role === 'owner' || s.role === 'admin';
