import { useState } from 'preact/hooks';
import { patch, post } from '../api.js';
import { ContentMode, StepList, TemplateSelect, useSteps, useTemplates } from '../kit/editor.js';
import type { Sequence } from '../types.js';
import { Alert, formatDelay, useActionError } from '../ui.js';

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

  const save = async (e: Event) => {
    e.preventDefault();
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
    <form class="panel" onSubmit={save} aria-labelledby="seq-form">
      <h2 id="seq-form">{existing ? 'Edit the sequence' : 'Sequence'}</h2>
      {existing && (
        <p class="muted">
          Enrolled contacts keep their place: their next step and its due time stay; the delays after it
          follow these steps.
        </p>
      )}
      <label for="seq-name">Name</label>
      <input
        id="seq-name"
        required
        maxLength={100}
        value={name}
        onInput={(e) => setName(e.currentTarget.value)}
      />
      <label for="seq-from">From</label>
      <input
        id="seq-from"
        required
        placeholder="Acme <hello@acme.test>"
        value={from}
        onInput={(e) => setFrom(e.currentTarget.value)}
      />
      <StepList
        steps={steps}
        setSteps={setSteps}
        newStep={() => emptyStep(1440)}
        canAdd={steps.length < MAX_STEPS}
      >
        {(s, i) => (
          <>
            <label for={`step-${i}-delay`}>
              {i === 0 ? 'Minutes after enrollment' : `Minutes after step ${i}`}
            </label>
            <input
              id={`step-${i}-delay`}
              type="number"
              inputMode="numeric"
              required
              min={0}
              max={525600}
              aria-describedby={`step-${i}-delay-said`}
              value={s.delayMinutes}
              onInput={(e) => setStep(i, { delayMinutes: e.currentTarget.value })}
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
            <label for={`step-${i}-subject`}>{s.mode === 'own' ? 'Subject' : 'Subject (optional)'}</label>
            <input
              id={`step-${i}-subject`}
              required={s.mode === 'own'}
              maxLength={998}
              value={s.subject}
              onInput={(e) => setStep(i, { subject: e.currentTarget.value })}
            />
            {s.mode === 'own' && (
              <>
                <label for={`step-${i}-html`}>HTML</label>
                <textarea
                  id={`step-${i}-html`}
                  rows={4}
                  spellcheck={false}
                  value={s.html}
                  onInput={(e) => setStep(i, { html: e.currentTarget.value })}
                />
                <label for={`step-${i}-text`}>Text</label>
                <textarea
                  id={`step-${i}-text`}
                  rows={3}
                  value={s.text}
                  onInput={(e) => setStep(i, { text: e.currentTarget.value })}
                />
              </>
            )}
          </>
        )}
      </StepList>
      <Alert message={saving.error} />
      <button type="submit">{existing ? 'Save sequence' : 'Create sequence'}</button>
    </form>
  );
}
