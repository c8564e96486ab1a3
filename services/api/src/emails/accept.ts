// How `POST /emails/send|batch` accept their bodies (SPEC §11): the project of each, the checks of
// the whole batch (sizes, schedule, templates, verified From), the rows and every `email.queued`
// appended at once, and the Idempotency-Key replay.

import { MAX_MESSAGE_BYTES, messageBytes, normalizeSendBody, type SendEmailBody } from '@tern/contracts';
import { cutSubject, renderTemplate, scheduleProblem } from '@tern/domain';
import { appendOr503, httpError } from '@tern/http';
import { decodeAttachments, enqueueSends, type NewSend, type StoredMessage } from '@tern/sending';
import type { TemplateStore } from '@tern/templates';
import type { FastifyRequest } from 'fastify';
import { boundProject, type Credential, credentialOf } from '../credentials.js';
import { newResourceId } from '../resource-kit.js';
import type { ApiRouteDeps, SendingDeps } from '../route-deps.js';
import { claimOrRefuse, idempotencyKeyOf, requestHash } from './idempotency.js';

/** What the send routes need: the query API's deps and the sending ones (SPEC §11). */
export type SendRouteDeps = Pick<ApiRouteDeps, 'fromDomains' | 'idempotency' | 'now' | 'pool'> & {
  templates: TemplateStore;
} & {
  sending: SendingDeps;
};

/**
 * The part of a body that is the message (scheduling and project live in their own columns), and
 * its attachments' bytes apart: the message keeps only their description.
 */
function storedMessage(body: SendEmailBody): { message: StoredMessage; files?: NewSend['files'] } {
  const { scheduledAt: _s, projectId: _p, attachments, ...message } = normalizeSendBody(body);
  if (attachments === undefined || attachments.length === 0) return { message };
  const { files, meta } = decodeAttachments(attachments);
  return { message: { ...message, attachments: meta }, files };
}

/**
 * SPEC §22: each message at most 40 MB (attachments as base64 plus content) → 413
 * `PAYLOAD_TOO_LARGE` naming the messages past it; attachments need the keyring that seals them.
 */
function assertMessageSizes(
  bodies: readonly SendEmailBody[],
  prefix: (i: number) => string,
  sealable: boolean,
): void {
  const large = bodies.flatMap((b, i) => {
    const size = messageBytes(b);
    return size > MAX_MESSAGE_BYTES
      ? [`${prefix(i)}attachments: the message must be at most ${MAX_MESSAGE_BYTES} bytes (got ${size})`]
      : [];
  });
  if (large.length > 0) throw httpError(413, large.join('; '), { code: 'PAYLOAD_TOO_LARGE' });
  if (!sealable && bodies.some((b) => (b.attachments?.length ?? 0) > 0))
    throw httpError(503, 'attachments cannot be stored by this instance', { code: 'UNAVAILABLE' });
}

/**
 * The project of each send (SPEC §16): a project-bound key sends within its project only; the
 * body may name it or leave it out, and naming another project → 404 (that project does not
 * exist for this key), nothing queued.
 */
export function withProject(
  credential: Credential,
  bodies: readonly SendEmailBody[],
  prefix: (i: number) => string,
): SendEmailBody[] {
  const bound = boundProject(credential);
  if (bound === null) return [...bodies];
  const foreign = bodies.flatMap((b, i) =>
    b.projectId !== undefined && b.projectId !== bound ? [`${prefix(i)}projectId: Project not found`] : [],
  );
  if (foreign.length > 0) throw httpError(404, foreign.join('; '), { code: 'NOT_FOUND' });
  return bodies.map((b) => ({ ...b, projectId: bound }));
}

/** Clock-dependent and cross-resource checks of a whole batch; throws one 400 naming every field. */
async function prepare(
  deps: SendRouteDeps,
  tenantId: string,
  bodies: readonly SendEmailBody[],
  prefix: (i: number) => string,
) {
  const at = deps.now();
  const problems: string[] = [];
  const templateIds = [...new Set(bodies.flatMap((b) => (b.templateId === undefined ? [] : [b.templateId])))];
  const templates = new Map(
    await Promise.all(templateIds.map(async (id) => [id, await deps.templates.get(tenantId, id)] as const)),
  );
  const prepared = bodies.map((body, i) => {
    let scheduledAt: Date | null = null;
    if (body.scheduledAt !== undefined) {
      scheduledAt = new Date(body.scheduledAt);
      const problem = scheduleProblem(scheduledAt, at);
      if (problem !== null) problems.push(`${prefix(i)}scheduledAt: ${problem}`);
    }
    let subject = body.subject ?? '';
    if (body.templateId !== undefined) {
      const template = templates.get(body.templateId);
      if (!template) problems.push(`${prefix(i)}templateId: template ${body.templateId} not found`);
      else
        subject = renderTemplate(
          { subject: body.subject ?? template.subject, html: template.html, text: template.text },
          body.variables ?? {},
        ).subject;
    }
    return { body, scheduledAt, subject: cutSubject(subject) };
  });
  if (problems.length > 0) throw httpError(400, problems.join('; '), { code: 'FST_ERR_VALIDATION' });
  const froms = bodies.map((b, i) => ({ field: `${prefix(i)}from`, from: b.from }));
  await deps.fromDomains.assertVerified(tenantId, froms);
  return { at, prepared };
}

/** Writes the rows, appends every email.queued in one append; nothing is kept when the log refuses. */
export async function accept(
  deps: SendRouteDeps,
  credential: Credential,
  bodies: readonly SendEmailBody[],
  prefix: (i: number) => string,
  /** Called with the new email ids before any row is written (an Idempotency-Key plans its answer). */
  planned?: (ids: readonly string[]) => Promise<void>,
) {
  const { sending } = deps;
  const { tenantId } = credential;
  assertMessageSizes(bodies, prefix, sending.keyring !== undefined);
  const { at, prepared } = await prepare(deps, tenantId, bodies, prefix);
  const sends: NewSend[] = prepared.map(({ body, scheduledAt, subject }) => ({
    id: newResourceId('email', at.getTime()),
    ...storedMessage(body),
    subject,
    templateId: body.templateId ?? null,
    dueAt: scheduledAt ?? at,
    scheduledAt,
    projectId: body.projectId ?? null,
  }));
  await planned?.(sends.map((s) => s.id));
  await appendOr503(
    () => enqueueSends(deps.pool, sending.log, tenantId, sends, at, sending.keyring),
    'queued',
  );
  return sends.map((s) => s.id);
}

/**
 * Runs `produce` at most once per (tenant, project scope, Idempotency-Key) and body; replays its
 * answer. `sent` is the body with the project applied (`withProject`), so the hash says what
 * would be queued; the scope is the key's bound project (issue 24, item 6).
 */
export async function idempotent<T>(
  deps: SendRouteDeps,
  request: FastifyRequest,
  route: string,
  sent: unknown,
  /**
   * The request's work; with an Idempotency-Key, `plan` stores the answer it will give (its body
   * and email ids) before the rows are written, so a retry after a crash resolves to it once the
   * log holds the email.queued (issue 49, item 2).
   */
  produce: (plan?: (body: T, emailIds: readonly string[]) => Promise<void>) => Promise<T>,
): Promise<{ statusCode: number; body: T }> {
  const credential = credentialOf(request);
  const { tenantId } = credential;
  const scope = boundProject(credential) ?? '';
  const key = idempotencyKeyOf(request.headers);
  if (key === undefined) return { statusCode: 202, body: await produce() };
  const claim = claimOrRefuse(
    await deps.idempotency.claim({
      tenantId,
      scope,
      key,
      route,
      hash: requestHash(route, sent),
      now: deps.now,
    }),
  );
  if (claim.kind === 'replay') return { statusCode: claim.answer.statusCode, body: claim.answer.body as T };
  try {
    const body = await produce((planned, emailIds) =>
      deps.idempotency.plan({
        tenantId,
        scope,
        key,
        planned: { statusCode: 202, body: planned, emailIds: [...emailIds] },
      }),
    );
    await deps.idempotency.storeAnswer({ tenantId, scope, key, answer: { statusCode: 202, body } });
    return { statusCode: 202, body };
  } catch (error) {
    await deps.idempotency.release({ tenantId, scope, key }).catch(() => undefined);
    throw error;
  }
}
