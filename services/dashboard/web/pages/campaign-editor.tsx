import { useEffect, useState } from 'preact/hooks';
import { get, patch, post, query } from '../api.js';
import { ContentMode, TemplateSelect, useTemplates } from '../kit/editor.js';
import { Field } from '../kit/form.js';
import { routeHref } from '../router.js';
import type { Audience, Campaign, List, Rendered } from '../types.js';
import { Alert, ErrorNotice, formatNumber, HtmlPreview, useActionError, useLoad } from '../ui.js';

/** The contact a preview renders for: the variables every campaign email has (SPEC §15). */
const SAMPLE_CONTACT = { email: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace' };

export interface Draft {
  name: string;
  from: string;
  audience: string;
  mode: 'own' | 'template';
  templateId: string;
  subject: string;
  html: string;
  text: string;
}

export const draftOf = (c: Campaign | undefined): Draft => ({
  name: c?.name ?? '',
  from: c?.from ?? '',
  audience: c?.audience ?? '',
  mode: c?.templateId ? 'template' : 'own',
  templateId: c?.templateId ?? '',
  subject: c?.subject ?? '',
  html: c?.html ?? '',
  text: c?.text ?? '',
});

/**
 * The create / edit form of a draft, with the audience's reach and a live preview. A template's
 * preview is the API's own rendering (`POST /templates/:id/render`); own content is shown as
 * typed — HTML only inside a sandboxed frame (no script, no same-origin access, no remote load
 * under the CSP), never in the page itself.
 */
export function CampaignEditor({
  existing,
  onSaved,
}: {
  existing?: Campaign;
  onSaved: (c: Campaign) => void;
}) {
  const [d, setD] = useState<Draft>(() => draftOf(existing));
  const saving = useActionError();
  const templates = useTemplates();
  const set = (patchOf: Partial<Draft>) => setD((cur) => ({ ...cur, ...patchOf }));
  const field = (k: 'name' | 'from' | 'subject' | 'html' | 'text') => ({
    id: `cmp-${k}`,
    value: d[k],
    onInput: (e: { currentTarget: { value: string } }) => set({ [k]: e.currentTarget.value }),
  });

  const save = async (e: Event) => {
    e.preventDefault();
    const own = d.mode === 'own';
    const content = own
      ? { subject: d.subject, ...(d.html ? { html: d.html } : {}), ...(d.text ? { text: d.text } : {}) }
      : { templateId: d.templateId, ...(d.subject ? { subject: d.subject } : {}) };
    await saving.run(async () => {
      if (existing) {
        // A patch names every content field: what the other mode had is cleared.
        const res = await patch<Campaign>(`/campaigns/${encodeURIComponent(existing.id)}`, {
          name: d.name,
          from: d.from,
          audience: d.audience.trim(),
          templateId: own ? null : d.templateId,
          subject: d.subject || null,
          html: own && d.html ? d.html : null,
          text: own && d.text ? d.text : null,
        });
        onSaved(res.body);
      } else {
        const res = await post<Campaign>('/campaigns', {
          name: d.name,
          from: d.from,
          audience: d.audience.trim(),
          ...content,
        });
        onSaved(res.body);
      }
    });
  };

  return (
    <div class="split">
      <form class="panel" onSubmit={save} aria-labelledby="cmp-form">
        <h2 id="cmp-form">{existing ? 'Draft' : 'Campaign'}</h2>
        <label for="cmp-name">Name</label>
        <input required maxLength={100} {...field('name')} />
        <label for="cmp-from">From</label>
        <input
          required
          placeholder="Acme <news@acme.test>"
          aria-describedby="cmp-from-help"
          {...field('from')}
        />
        <p class="muted" id="cmp-from-help">
          An address, or <code>Name &lt;address&gt;</code>.
        </p>
        <AudienceField value={d.audience} onChange={(audience) => set({ audience })} />
        <fieldset>
          <legend>Content</legend>
          <ContentMode name="cmp-mode" mode={d.mode} onChange={(mode) => set({ mode })} />
          {d.mode === 'template' && (
            <>
              <label for="cmp-template">Template</label>
              <TemplateSelect
                id="cmp-template"
                value={d.templateId}
                onChange={(templateId) => set({ templateId })}
                templates={templates.data}
              />
              {templates.data?.length === 0 && (
                <p class="muted">
                  No template yet: write one on the <a href={routeHref('/templates')}>Templates</a> page, or
                  write the content here.
                </p>
              )}
            </>
          )}
          <label for="cmp-subject">
            {d.mode === 'own' ? 'Subject' : 'Subject (optional, replaces the template’s)'}
          </label>
          <input required={d.mode === 'own'} maxLength={998} {...field('subject')} />
          {d.mode === 'own' && (
            <>
              <label for="cmp-html">HTML</label>
              <textarea rows={8} spellcheck={false} {...field('html')} />
              <label for="cmp-text">Text</label>
              <textarea rows={4} {...field('text')} />
              <p class="muted">
                HTML or text, or both. <code>{'{{firstName}}'}</code>, <code>{'{{lastName}}'}</code>,{' '}
                <code>{'{{email}}'}</code> and the contact’s attributes are filled in for each contact; every
                email carries an unsubscribe link.
              </p>
            </>
          )}
        </fieldset>
        <Alert message={saving.error} />
        <button type="submit">{existing ? 'Save draft' : 'Create draft'}</button>
      </form>
      <Preview draft={d} />
    </div>
  );
}

/** The audience input, the audiences it may name, and whom the campaign reaches now. */
function AudienceField({ value, onChange }: { value: string; onChange: (v: string) => void }) {
  const audiences = useLoad(
    () => get<List<Audience>>(`/audiences${query({ limit: 100 })}`).then((r) => r.body.data),
    [],
  );
  // Read the count of the name typed once typing pauses (the list holds only the first 100).
  const [name, setName] = useState(value.trim());
  useEffect(() => {
    const timer = setTimeout(() => setName(value.trim()), 300);
    return () => clearTimeout(timer);
  }, [value]);
  const reach = useLoad(
    () =>
      name === ''
        ? Promise.resolve(undefined)
        : get<List<Audience>>(`/audiences${query({ name })}`).then(
            (r) => r.body.data[0] ?? { name, contacts: 0, subscribed: 0, reachable: 0 },
          ),
    [name],
  );
  return (
    <>
      <Field
        id="cmp-audience"
        label="Audience"
        required
        list="cmp-audiences"
        aria-describedby="cmp-reach"
        value={value}
        onInput={onChange}
      />
      <datalist id="cmp-audiences">
        {audiences.data?.map((a) => (
          <option key={a.name} value={a.name}>
            {`${a.reachable} reachable`}
          </option>
        ))}
      </datalist>
      <p class="muted" id="cmp-reach" aria-live="polite" data-testid="reach">
        {reach.data
          ? `Reaches ${formatNumber(reach.data.reachable)} contacts now (${formatNumber(reach.data.contacts)} in the audience, ${formatNumber(reach.data.subscribed)} subscribed; suppressed addresses are left out).`
          : audiences.data?.length === 0
            ? 'No audience yet: give contacts an audience on the Contacts page.'
            : 'Type or choose an audience to see how many contacts it reaches.'}
      </p>
    </>
  );
}

/** What a contact would see: the template rendered by the API, or the content as typed. */
export function Preview({ draft }: { draft: Draft }) {
  const rendered = useLoad(
    () =>
      draft.mode === 'template' && draft.templateId
        ? post<Rendered>(`/templates/${encodeURIComponent(draft.templateId)}/render`, {
            variables: SAMPLE_CONTACT,
          }).then((r) => r.body)
        : Promise.resolve(undefined),
    [draft.mode, draft.templateId],
  );
  const own = draft.mode === 'own';
  const subject = draft.subject || (own ? '' : (rendered.data?.subject ?? ''));
  const html = own ? draft.html : (rendered.data?.html ?? '');
  const text = own ? draft.text : (rendered.data?.text ?? '');
  return (
    <section class="panel" aria-labelledby="cmp-preview" data-testid="preview">
      <h2 id="cmp-preview">Preview</h2>
      <p class="muted">
        {own
          ? 'As typed: the variables are filled in per contact when it is sent.'
          : `Rendered by Tern for a sample contact (${SAMPLE_CONTACT.firstName} ${SAMPLE_CONTACT.lastName}).`}
      </p>
      {rendered.error && <ErrorNotice error={rendered.error} what="template previews" />}
      <p>
        <strong>Subject:</strong> <span data-testid="preview-subject">{subject || '—'}</span>
      </p>
      {html ? (
        <HtmlPreview html={html} title="Campaign preview" />
      ) : text ? (
        <pre class="text-body" data-testid="preview-text">
          {text}
        </pre>
      ) : (
        <p class="muted">Nothing to show yet.</p>
      )}
    </section>
  );
}
