import { classifyBearer, isAuthError, type JwtVerifier } from '@tern/auth';
import { type ErrorCodeOf, MISSING_SCOPE_MESSAGE, type Role, type Scope } from '@tern/contracts';
import { HttpError, httpError } from '@tern/http';
import type { ApiKeyStore } from '@tern/tenant-settings';
import type { FastifyRequest } from 'fastify';

/** Who is calling, once the credential was verified. */
export type Credential =
  | { kind: 'jwt'; tenantId: string; role: Role; sub?: string }
  | {
      kind: 'api_key';
      tenantId: string;
      keyId: string;
      scopes: string[];
      /** A key created with `projectId` sends and reads only within that project (SPEC §16). */
      projectId: string | null;
    };

/**
 * Route `config` read by the auth hook. `auth: 'jwt'` — dashboard sessions only (optionally of
 * the tenant in path parameter `tenantParam`, with one of `roles`); `auth: 'jwt_or_key'` — a
 * dashboard session, or an API key holding `scope`. Routes without `auth` are public.
 */
export interface AuthConfig {
  auth?: 'jwt' | 'jwt_or_key';
  scope?: Scope;
  roles?: readonly Role[];
  tenantParam?: string;
  /** A public route's credential, for the docs (e.g. a signed token in its path). */
  publicCredential?: string;
  /**
   * No API key may call the route, whatever its scopes: 403 `Missing required API key scope`
   * (SPEC §12: keys only read templates; writes need a dashboard session).
   */
  denyKeys?: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig extends AuthConfig {}
  interface FastifyRequest {
    /** Set by the auth hook on every route that has an `auth` config. */
    credential: Credential | null;
  }
}

export const JWT_REQUIRED_MESSAGE =
  'A dashboard session (JWT) is required for this endpoint; API keys are not accepted';
const MISSING_CREDENTIAL_MESSAGE =
  'Missing credential: send Authorization: Bearer <token> or X-API-Key: <key>';
const INVALID_KEY_MESSAGE = 'Invalid API key';
const INVALID_CREDENTIAL_MESSAGE = 'Invalid credential: expected a dashboard JWT or an API key';
const WWW_AUTHENTICATE = { 'www-authenticate': 'Bearer realm="tern"' };

const unauthorized = (message: string, code: ErrorCodeOf<401> = 'INVALID_CREDENTIAL') =>
  httpError(401, message, { code }, WWW_AUTHENTICATE);

/** The presented credential string and the header it came in. */
function presented(request: FastifyRequest): { value: string; via: 'authorization' | 'x-api-key' } | null {
  const authorization = request.headers.authorization;
  const apiKeyHeader = request.headers['x-api-key'];
  const headerKey = typeof apiKeyHeader === 'string' ? apiKeyHeader.trim() : undefined;
  let bearer: string | undefined;
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match?.[1]) throw unauthorized('Invalid Authorization header: expected "Bearer <token>"');
    bearer = match[1];
  }
  if (Array.isArray(apiKeyHeader)) throw unauthorized('Send one X-API-Key header');
  if (bearer !== undefined && headerKey !== undefined && bearer !== headerKey) {
    // Two different credentials: picking one silently could act as the wrong tenant.
    throw unauthorized('Send one credential: Authorization or X-API-Key, not two different ones');
  }
  if (bearer !== undefined) return { value: bearer, via: 'authorization' };
  if (headerKey) return { value: headerKey, via: 'x-api-key' };
  return null;
}

/**
 * The credential of a request (SPEC §3): a JWT or an API key, told apart by their form. Every
 * refusal is a 401; an unknown, revoked or expired key all get the same message.
 */
export async function verifyCredential(
  request: FastifyRequest,
  deps: { jwt: JwtVerifier; keys: ApiKeyStore },
): Promise<Credential> {
  const found = presented(request);
  if (found === null) throw unauthorized(MISSING_CREDENTIAL_MESSAGE, 'MISSING_CREDENTIAL');
  const kind = classifyBearer(found.value);
  if (kind === 'api_key') {
    const key = await deps.keys.authenticate(found.value);
    if (key === null) throw unauthorized(INVALID_KEY_MESSAGE);
    return {
      kind: 'api_key',
      tenantId: key.tenantId,
      keyId: key.id,
      scopes: key.scopes,
      projectId: key.projectId,
    };
  }
  if (kind === 'jwt' && found.via === 'authorization') {
    try {
      const claims = await deps.jwt.verify(found.value);
      return {
        kind: 'jwt',
        tenantId: claims.tenantId,
        role: claims.role,
        ...(claims.sub === undefined ? {} : { sub: claims.sub }),
      };
    } catch (error) {
      if (isAuthError(error))
        throw unauthorized(
          error.message,
          error.reason === 'expired' ? 'EXPIRED_CREDENTIAL' : 'INVALID_CREDENTIAL',
        );
      throw error;
    }
  }
  // An X-API-Key that is not a key (even a JWT) is refused like an unknown key.
  throw unauthorized(found.via === 'x-api-key' ? INVALID_KEY_MESSAGE : INVALID_CREDENTIAL_MESSAGE);
}

/**
 * What a project-bound API key may do (SPEC §16: it acts only within its project; issue 24
 * item 11), decided per resource — docs/architecture.md § "Project-bound keys":
 * - emails (send, logs, `/emails/:id`, analytics by key) and `/projects`: narrowed to the project
 *   by their routes (another project's email or project → 404; creating a project → 403);
 * - webhooks: refused (their endpoints receive every project's events; `webhooks/routes.ts`);
 * - tenant-wide resources — contacts and audiences, campaigns, sequences, suppressions, templates,
 *   domains: read tenant-wide (`*:read`, `email:send` for domains), never changed: a route needing
 *   one of these scopes answers 403. Campaigns and sequences send mail without a project, an
 *   erasure or a suppression reaches every project's mail, a contact change every project's sends.
 */
export const TENANT_WIDE_WRITE_SCOPES: readonly Scope[] = [
  'contacts:write',
  'campaigns:write',
  'sequences:write',
  'suppressions:write',
  'automations:write',
];
export const PROJECT_KEY_TENANT_WIDE_MESSAGE =
  'This API key is bound to a project: contacts, campaigns, sequences and suppressions are tenant-wide, so it may read them but not change them; use a key without a project or a dashboard session';

/** Checks a verified credential against the route's requirement; throws the 403. */
export function authorize(credential: Credential, config: AuthConfig, params: unknown): void {
  if (config.auth === 'jwt' && credential.kind !== 'jwt')
    throw httpError(403, JWT_REQUIRED_MESSAGE, { code: 'FORBIDDEN' });
  if (config.tenantParam !== undefined) {
    const wanted = (params as Record<string, unknown> | undefined)?.[config.tenantParam];
    if (wanted !== credential.tenantId)
      throw httpError(403, 'This credential belongs to another tenant', { code: 'FORBIDDEN' });
  }
  if (credential.kind === 'jwt' && config.roles !== undefined && !config.roles.includes(credential.role)) {
    throw httpError(403, `Requires the role ${config.roles.join(' or ')}`, { code: 'FORBIDDEN' });
  }
  if (credential.kind === 'api_key' && config.denyKeys === true) {
    throw httpError(403, MISSING_SCOPE_MESSAGE, { code: 'MISSING_SCOPE' });
  }
  if (
    credential.kind === 'api_key' &&
    config.scope !== undefined &&
    !credential.scopes.includes(config.scope)
  ) {
    throw httpError(403, MISSING_SCOPE_MESSAGE, { code: 'MISSING_SCOPE', missingScope: config.scope });
  }
  if (
    credential.kind === 'api_key' &&
    credential.projectId !== null &&
    config.scope !== undefined &&
    TENANT_WIDE_WRITE_SCOPES.includes(config.scope)
  ) {
    throw httpError(403, PROJECT_KEY_TENANT_WIDE_MESSAGE, { code: 'FORBIDDEN' });
  }
}

/**
 * Adds `bindings` to the request's logger. Fastify gives each request a child logger of its own;
 * pino's `setBindings` extends it in place (issue 29: a second `child()` per request cost more than
 * the rest of the auth hook). A logger shared by every request (Fastify's without logging, a
 * logger lacking `setBindings`) gets a child instead, so no request's bindings reach another's.
 */
function bindCaller(request: FastifyRequest, bindings: Record<string, string>): void {
  const log = request.log as FastifyRequest['log'] & { setBindings?: (b: Record<string, string>) => void };
  if (log !== request.server.log && typeof log.setBindings === 'function') log.setBindings(bindings);
  else request.log = log.child(bindings);
}

/** The onRequest hook: verifies and authorizes when the route has an `auth` config. */
export function createAuthHook(deps: { jwt: JwtVerifier; keys: ApiKeyStore }) {
  return async function authHook(request: FastifyRequest): Promise<void> {
    const config = request.routeOptions.config;
    if (config.auth === undefined) return;
    const credential = await verifyCredential(request, deps);
    request.credential = credential;
    // Bind who is calling to every later log line of the request (never the credential itself).
    bindCaller(
      request,
      credential.kind === 'jwt'
        ? { tenantId: credential.tenantId, auth: 'jwt' }
        : { tenantId: credential.tenantId, auth: 'api_key', keyId: credential.keyId },
    );
    authorize(credential, config, request.params);
  };
}

/** The project an API key is bound to (SPEC §16), or null: a JWT or an unbound key sees every project. */
export const boundProject = (credential: Credential): string | null =>
  credential.kind === 'api_key' ? credential.projectId : null;

/** The credential of an authenticated route (the hook ran). */
export function credentialOf(request: FastifyRequest): Credential {
  if (request.credential === null)
    throw new HttpError(500, 'route has no auth config', { code: 'INTERNAL_ERROR' });
  return request.credential;
}
