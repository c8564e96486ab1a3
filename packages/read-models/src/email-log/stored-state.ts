import { type EmailState, initialEmailState } from '@tern/domain';

/** The query columns of an `email_logs` row that a fold state's fields are written to (`logRows`). */
export interface LogColumns {
  to_email: string | null;
  subject: string | null;
  status: string | null;
  provider: string | null;
  message_id: string | null;
  template_id: string | null;
  project_id: string | null;
  tags: readonly string[];
}

const sameTags = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((t, i) => t === b[i]);

/**
 * The fields of a new email's fold state that no column holds, at their initial values (nulls,
 * zero counts, `hardBounced: false`): a stored state leaves out a field at its initial value.
 */
const DEFAULTS: Record<string, unknown> = (() => {
  const {
    tenantId: _t,
    emailId: _e,
    queued: _q,
    status: _s,
    provider: _p,
    messageId: _m,
    ...rest
  } = initialEmailState('', '');
  return rest;
})();

/**
 * What `email_logs.state` stores of a fold state (issue 45 item 2): the fields no column of its row
 * holds. A field equal to the column written beside it from the same state is left out (the
 * tenant, the id, and once the email is queued its recipient, subject, template, project, tags,
 * status, provider and message id), and so is a field at its initial value (`DEFAULTS`): ≈ 500 of
 * 950 bytes a row version of a delivered email. `fullStateSql` puts the columns and the initial
 * values back. A field that differs from its column is kept, and a kept field wins over its
 * column, so a state stored whole (as every row was before this) reads the same.
 */
export function storedState(state: EmailState, row: LogColumns): Record<string, unknown> {
  const { tenantId: _tenant, emailId: _id, status, provider, messageId, queued, ...rest } = state;
  const stored: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(rest))
    if (!(field in DEFAULTS && DEFAULTS[field] === value)) stored[field] = value;
  if (status !== row.status) stored.status = status;
  if (provider !== row.provider) stored.provider = provider;
  if (messageId !== row.message_id) stored.messageId = messageId;
  if (queued === null) {
    stored.queued = null;
    return stored;
  }
  const { toEmail, subject, templateId, projectId, tags, ...kept } = queued;
  const q: Record<string, unknown> = kept;
  if (toEmail !== row.to_email) q.toEmail = toEmail;
  if (subject !== row.subject) q.subject = subject;
  if (templateId !== row.template_id) q.templateId = templateId;
  if (projectId !== row.project_id) q.projectId = projectId;
  if (!sameTags(tags, row.tags)) q.tags = tags;
  stored.queued = q;
  return stored;
}

/**
 * The whole fold state of the `email_logs` row `e` (an alias), as jsonb: the initial values, under
 * its columns, under the stored fields (`storedState`). The one reader of `email_logs.state` as a fold state.
 */
export function fullStateSql(e: string): string {
  return `('${JSON.stringify(DEFAULTS)}'::jsonb
          || jsonb_build_object('tenantId', ${e}.tenant_id, 'emailId', ${e}.id, 'status', ${e}.status,
            'provider', ${e}.provider, 'messageId', ${e}.message_id)
          || ${e}.state
          || CASE WHEN jsonb_typeof(${e}.state->'queued') = 'object'
                  THEN jsonb_build_object('queued', jsonb_build_object('toEmail', ${e}.to_email,
                         'subject', ${e}.subject, 'templateId', ${e}.template_id, 'projectId', ${e}.project_id,
                         'tags', ${e}.tags) || (${e}.state->'queued'))
                  ELSE '{}'::jsonb END)`;
}
