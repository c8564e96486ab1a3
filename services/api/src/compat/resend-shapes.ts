// Resend's shapes as Tern's and back: send bodies and attachments in, emails, domains and contacts
// out, and the audience ids (a Tern audience's name in base64url).
import { type Json, ResendError, validation } from './resend-kit.js';

const asList = (value: unknown, field: string): string[] => {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  throw validation(`\`${field}\` must be a string or an array of strings`);
};

/** A Resend send body as Tern's `POST /emails/send` body. */
export function sendBodyFromResend(input: unknown, at = ''): Json {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw validation(`${at}the body must be a JSON object`);
  const r = input as Json;
  const to = asList(r.to, `${at}to`);
  if (to.length === 0) throw new ResendError(422, 'missing_required_field', `${at}Missing \`to\` field.`);
  const replyTo = asList(r.reply_to ?? r.replyTo, `${at}reply_to`);
  if (replyTo.length > 1)
    throw validation(`${at}Tern takes one \`reply_to\` address (got ${replyTo.length})`);
  const attachments = attachmentsFromResend(r.attachments, at);
  let tags: string[] | undefined;
  if (r.tags !== undefined && r.tags !== null) {
    if (!Array.isArray(r.tags)) throw validation(`${at}\`tags\` must be an array of { name, value }`);
    tags = r.tags.map((t, i) => {
      const tag = t as { name?: unknown; value?: unknown };
      if (typeof tag?.name !== 'string' || tag.name === '')
        throw validation(`${at}tags[${i}].name must be a non-empty string`);
      if (tag.value !== undefined && typeof tag.value !== 'string')
        throw validation(`${at}tags[${i}].value must be a string`);
      return tag.value === undefined || tag.value === '' ? tag.name : `${tag.name}:${tag.value}`;
    });
  }
  const template = r.template as { id?: unknown; variables?: unknown } | undefined;
  const cc = asList(r.cc, `${at}cc`);
  const bcc = asList(r.bcc, `${at}bcc`);
  const scheduledAt = r.scheduled_at ?? r.scheduledAt;
  return {
    from: r.from,
    // Several recipients are one email (SPEC §22): an array stays an array (Tern checks 1..50).
    to: typeof r.to === 'string' ? r.to : to,
    ...(cc.length > 0 ? { cc } : {}),
    ...(bcc.length > 0 ? { bcc } : {}),
    ...(replyTo.length > 0 ? { replyTo: replyTo[0] } : {}),
    ...(r.subject !== undefined ? { subject: r.subject } : {}),
    ...(typeof r.html === 'string' ? { html: r.html } : {}),
    ...(typeof r.text === 'string' ? { text: r.text } : {}),
    ...(r.headers !== undefined && r.headers !== null ? { headers: r.headers } : {}),
    ...(tags && tags.length > 0 ? { tags } : {}),
    ...(scheduledAt !== undefined && scheduledAt !== null ? { scheduledAt } : {}),
    ...(template && typeof template === 'object' && template.id !== undefined
      ? {
          templateId: template.id,
          ...(template.variables !== undefined ? { variables: template.variables } : {}),
        }
      : {}),
    ...(attachments.length > 0 ? { attachments } : {}),
  };
}

/**
 * Resend's `attachments` (what the package sends: `content` as base64 — it encodes a Buffer
 * itself — `filename`, `content_type`, `content_id`, or `path`, a URL Resend fetches) as Tern's.
 * Tern fetches no URL (no request to an address a caller chooses): `path` → 422. Tern's route
 * checks the rest (base64, names, 40 MB).
 */
function attachmentsFromResend(value: unknown, at: string): Json[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw validation(`${at}\`attachments\` must be an array`);
  return value.map((item, i) => {
    const a = (item ?? {}) as Json;
    if (a.content === undefined || a.content === null) {
      throw validation(
        a.path !== undefined
          ? `${at}attachments[${i}].path: Tern does not fetch attachments from a URL; send the file as base64 \`content\``
          : `${at}attachments[${i}].content is required`,
      );
    }
    const contentType = a.content_type ?? a.contentType;
    const contentId = a.content_id ?? a.contentId;
    return {
      filename: a.filename,
      content: a.content,
      ...(contentType !== undefined && contentType !== null ? { contentType } : {}),
      ...(contentId !== undefined && contentId !== null ? { contentId } : {}),
    };
  });
}

/** Tern's status as Resend's `last_event`. */
const LAST_EVENT: Record<string, string> = {
  QUEUED: 'queued',
  SCHEDULED: 'scheduled',
  SENT: 'sent',
  DELAYED: 'delivery_delayed',
  DELIVERED: 'delivered',
  BOUNCED: 'bounced',
  FAILED: 'failed',
  SUPPRESSED: 'suppressed',
  CANCELLED: 'canceled',
};

const tagsAsResend = (tags: unknown) =>
  (Array.isArray(tags) ? (tags as string[]) : []).map((t) => {
    const i = t.indexOf(':');
    return i < 0 ? { name: t, value: '' } : { name: t.slice(0, i), value: t.slice(i + 1) };
  });

/** Tern's email (log entry or detail) as Resend's email object. */
export function emailAsResend(e: Json): Json {
  const opened = Number(e.opens ?? 0) > 0;
  const clicked = Number(e.clicks ?? 0) > 0;
  const status = String(e.status ?? 'QUEUED');
  const lastEvent =
    status === 'DELIVERED' && clicked
      ? 'clicked'
      : status === 'DELIVERED' && opened
        ? 'opened'
        : LAST_EVENT[status];
  return {
    object: 'email',
    id: e.id,
    // The detail lists every `to` (SPEC §22); a log entry, its first.
    to: Array.isArray(e.to) ? e.to : e.toEmail === null || e.toEmail === undefined ? [] : [e.toEmail],
    from: e.from ?? null,
    created_at: e.createdAt,
    subject: e.subject ?? null,
    html: e.html ?? null,
    text: e.text ?? null,
    bcc: e.bcc ?? null,
    cc: e.cc ?? null,
    reply_to: e.replyTo ? [e.replyTo] : null,
    last_event: lastEvent ?? status.toLowerCase(),
    scheduled_at: e.scheduledAt ?? null,
    tags: tagsAsResend(e.tags),
  };
}

/** Tern's domain as Resend's domain object. */
export function domainAsResend(d: Json, withRecords: boolean): Json {
  const records = (Array.isArray(d.records) ? (d.records as Json[]) : []).map((r) => ({
    record: r.purpose === 'dkim' ? 'DKIM' : r.purpose === 'dmarc' ? 'DMARC' : 'SPF',
    name: r.name,
    type: r.type,
    ttl: 'Auto',
    status: r.status === 'pending' ? 'not_started' : r.status,
    value: r.value,
    ...(r.type === 'MX' ? { priority: 10 } : {}),
  }));
  return {
    object: 'domain',
    id: d.id,
    name: d.name,
    status: d.status === 'pending' && d.lastCheckedAt === null ? 'not_started' : d.status,
    created_at: d.createdAt,
    region: null,
    ...(withRecords ? { records } : {}),
  };
}

// --- Audiences (Resend's segments) and contacts -----------------------------------------------
// Tern's audiences are names carried by contacts; Resend's id of one is its name in base64url.

export const audienceId = (name: string) => Buffer.from(name, 'utf8').toString('base64url');
export function audienceName(id: string): string {
  const name = /^[A-Za-z0-9_-]{1,200}$/.test(id) ? Buffer.from(id, 'base64url').toString('utf8') : '';
  if (name === '' || audienceId(name) !== id) throw new ResendError(404, 'not_found', 'Audience not found');
  return name;
}
export const contactAsResend = (c: Json): Json => ({
  object: 'contact',
  id: c.id,
  email: c.email,
  first_name: c.firstName ?? null,
  last_name: c.lastName ?? null,
  created_at: c.createdAt,
  unsubscribed: c.subscribed === false,
  properties: c.attributes ?? {},
});

/** Resend's contact fields as Tern's. */
export function contactFields(input: Json): Json {
  return {
    ...(input.first_name !== undefined ? { firstName: input.first_name } : {}),
    ...(input.last_name !== undefined ? { lastName: input.last_name } : {}),
    ...(input.unsubscribed !== undefined && input.unsubscribed !== null
      ? { subscribed: input.unsubscribed !== true }
      : {}),
    ...(input.properties !== undefined && input.properties !== null ? { attributes: input.properties } : {}),
  };
}
