import { useState } from 'preact/hooks';
import { get, patch, post, query } from '../api.js';
import type { List, Sequence, Template } from '../types.js';
import { Alert, formatDelay, useActionError, useLoad } from '../ui.js';

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
  const [steps, setSteps] = useState<StepDraft[]>(
    existing?.steps.map((s) => ({
      delayMinutes: String(s.delayMinutes),
      mode: s.templateId ? 'template' : 'own',
      templateId: s.templateId ?? '',
      subject: s.subject ?? '',
      html: s.html ?? '',
      text: s.text ?? '',
    })) ?? [emptyStep(0)],
  );
  const templates = useLoad(
    () => get<List<Template>>(`/templates${query({ limit: 100 })}`).then((r) => r.body.data),
    [],
  );
  const saving = useActionError();
  const setStep = (i: number, change: Partial<StepDraft>) =>
    setSteps((cur) => cur.map((s, j) => (j === i ? { ...s, ...change } : s)));

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
      <ol class="steps">
        {steps.map((s, i) => (
          <li key={i}>
            <fieldset>
              <legend>Step {i + 1}</legend>
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
              <label class="check">
                <input
                  type="radio"
                  name={`step-${i}-mode`}
                  checked={s.mode === 'own'}
                  onChange={() => setStep(i, { mode: 'own' })}
                />
                Write it here
              </label>
              <label class="check">
                <input
                  type="radio"
                  name={`step-${i}-mode`}
                  checked={s.mode === 'template'}
                  onChange={() => setStep(i, { mode: 'template' })}
                />
                From a template
              </label>
              {s.mode === 'template' && (
                <>
                  <label for={`step-${i}-template`}>Template</label>
                  <select
                    id={`step-${i}-template`}
                    required
                    value={s.templateId}
                    onChange={(e) => setStep(i, { templateId: e.currentTarget.value })}
                  >
                    <option value="">Choose a template</option>
                    {templates.data?.map((t) => (
                      <option key={t.id} value={t.id}>
                        {t.name}
                      </option>
                    ))}
                  </select>
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
              {steps.length > 1 && (
                <button
                  type="button"
                  class="secondary"
                  onClick={() => setSteps((cur) => cur.filter((_, j) => j !== i))}
                >
                  Remove step {i + 1}
                </button>
              )}
            </fieldset>
          </li>
        ))}
      </ol>
      <div class="row">
        <button
          type="button"
          class="secondary"
          disabled={steps.length >= MAX_STEPS}
          onClick={() => setSteps((cur) => [...cur, emptyStep(1440)])}
        >
          Add a step
        </button>
      </div>
      <Alert message={saving.error} />
      <button type="submit">{existing ? 'Save sequence' : 'Create sequence'}</button>
    </form>
  );
}
