import { useState } from 'preact/hooks';
import { patch, post } from '../api.js';
import { ContentMode, StepList, TemplateSelect, useSteps, useTemplates } from '../kit/editor.js';
import { AreaField, Field, PanelForm } from '../kit/form.js';
import type { Sequence } from '../types.js';
import { formatDelay, useActionError } from '../ui.js';

const MAX_STEPS = 20;

interface StepDraft {
  delayMinutes: string;
  mode: 'own' | 'template';
  templateId: string;
  subject: string;
  html: string;
  text: string;
}

const emptyStep = (delay: number): StepDraft => ({
  delayMinutes: String(delay),
  mode: 'own',
  templateId: '',
  subject: '',
  html: '',
  text: '',
});

/** The steps of a sequence (new or existing) and its name and sender; saved as a whole. */
export function SequenceEditor({
  existing,
  onSaved,
}: {
  existing?: Sequence;
  onSaved: (s: Sequence) => void;
}) {
  const [name, setName] = useState(existing?.name ?? '');
  const [from, setFrom] = useState(existing?.from ?? '');
  const { steps, setSteps, setStep } = useSteps<StepDraft>(
    () =>
      existing?.steps.map((s) => ({
        delayMinutes: String(s.delayMinutes),
        mode: s.templateId ? 'template' : 'own',
        templateId: s.templateId ?? '',
        subject: s.subject ?? '',
        html: s.html ?? '',
        text: s.text ?? '',
      })) ?? [emptyStep(0)],
  );
  const templates = useTemplates();
  const saving = useActionError();

  const save = async () => {
    const body = {
      name,
      from,
      steps: steps.map((s) => ({
        delayMinutes: Number(s.delayMinutes),
        ...(s.mode === 'template'
          ? { templateId: s.templateId, ...(s.subject ? { subject: s.subject } : {}) }
          : { subject: s.subject, ...(s.html ? { html: s.html } : {}), ...(s.text ? { text: s.text } : {}) }),
      })),
    };
    await saving.run(async () => {
      const res = existing
        ? await patch<Sequence>(`/sequences/${encodeURIComponent(existing.id)}`, body)
        : await post<Sequence>('/sequences', body);
      onSaved(res.body);
    });
  };

  return (
    <PanelForm
      id="seq-form"
      title={existing ? 'Edit the sequence' : 'Sequence'}
      submit={existing ? 'Save sequence' : 'Create sequence'}
      error={saving.error}
      onSubmit={save}
    >
      {existing && (
        <p class="muted">
          Enrolled contacts keep their place: their next step and its due time stay; the delays after it
          follow these steps.
        </p>
      )}
      <Field id="seq-name" label="Name" required maxLength={100} value={name} onInput={setName} />
      <Field
        id="seq-from"
        label="From"
        required
        placeholder="Acme <hello@acme.test>"
        value={from}
        onInput={setFrom}
      />
      <StepList
        steps={steps}
        setSteps={setSteps}
        newStep={() => emptyStep(1440)}
        canAdd={steps.length < MAX_STEPS}
      >
        {(s, i) => (
          <>
            <Field
              id={`step-${i}-delay`}
              label={i === 0 ? 'Minutes after enrollment' : `Minutes after step ${i}`}
              type="number"
              inputMode="numeric"
              required
              min={0}
              max={525600}
              aria-describedby={`step-${i}-delay-said`}
              value={s.delayMinutes}
              onInput={(delayMinutes) => setStep(i, { delayMinutes })}
            />
            <p class="muted" id={`step-${i}-delay-said`}>
              {Number.isInteger(Number(s.delayMinutes)) && Number(s.delayMinutes) >= 0
                ? formatDelay(Number(s.delayMinutes))
                : 'A whole number of minutes, 0 or more.'}
            </p>
            <ContentMode name={`step-${i}-mode`} mode={s.mode} onChange={(mode) => setStep(i, { mode })} />
            {s.mode === 'template' && (
              <>
                <label for={`step-${i}-template`}>Template</label>
                <TemplateSelect
                  id={`step-${i}-template`}
                  value={s.templateId}
                  onChange={(templateId) => setStep(i, { templateId })}
                  templates={templates.data}
                />
              </>
            )}
            <Field
              id={`step-${i}-subject`}
              label={s.mode === 'own' ? 'Subject' : 'Subject (optional)'}
              required={s.mode === 'own'}
              maxLength={998}
              value={s.subject}
              onInput={(subject) => setStep(i, { subject })}
            />
            {s.mode === 'own' && (
              <>
                <AreaField
                  id={`step-${i}-html`}
                  label="HTML"
                  rows={4}
                  spellcheck={false}
                  value={s.html}
                  onInput={(html) => setStep(i, { html })}
                />
                <AreaField
                  id={`step-${i}-text`}
                  label="Text"
                  rows={3}
                  value={s.text}
                  onInput={(text) => setStep(i, { text })}
                />
              </>
            )}
          </>
        )}
      </StepList>
    </PanelForm>
  );
}
