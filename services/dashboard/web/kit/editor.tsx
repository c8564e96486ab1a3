// The editors' shape: steps added and removed, a template chosen, a form or its JSON.
import type { ComponentChildren } from 'preact';
import { type Dispatch, type StateUpdater, useState } from 'preact/hooks';
import { get, query } from '../api.js';
import type { ContactProperty, List, Template } from '../types.js';
import { useLoad } from '../ui.js';
import { Options } from './form.js';

/** The tenant's templates (the first 100), for a template menu. */
export const useTemplates = () =>
  useLoad(() => get<List<Template>>(`/templates${query({ limit: 100 })}`).then((r) => r.body.data), []);

/** The tenant's contact properties, for a property menu. */
export const useProperties = () =>
  useLoad(() => get<{ data: ContactProperty[] }>('/contact-properties').then((r) => r.body.data), []);

/** A property menu's options: each property by name, with its type. */
export function PropertyOptions({ properties }: { properties: readonly ContactProperty[] | undefined }) {
  return <Options items={properties} value={(p) => p.name} label={(p) => `${p.name} (${p.type})`} />;
}

/** A template menu: "Choose a template", then each template by name. */
export function TemplateSelect({
  id,
  value,
  onChange,
  templates,
}: {
  id: string;
  value: string;
  onChange: (templateId: string) => void;
  templates: readonly Template[] | undefined;
}) {
  return (
    <select id={id} required value={value} onChange={(e) => onChange(e.currentTarget.value)}>
      <option value="">Choose a template</option>
      <Options items={templates} value={(t) => t.id} label={(t) => t.name} />
    </select>
  );
}

/** Content written here or taken from a template: the two radio buttons named `name`. */
export function ContentMode({
  name,
  mode,
  onChange,
}: {
  name: string;
  mode: 'own' | 'template';
  onChange: (mode: 'own' | 'template') => void;
}) {
  return (
    <>
      <label class="check">
        <input type="radio" name={name} checked={mode === 'own'} onChange={() => onChange('own')} />
        Write it here
      </label>
      <label class="check">
        <input type="radio" name={name} checked={mode === 'template'} onChange={() => onChange('template')} />
        From a template
      </label>
    </>
  );
}

/** Steps being written: the list, and a change to step `i`. */
export function useSteps<S>(initial: () => S[]) {
  const [steps, setSteps] = useState<S[]>(initial);
  const setStep = (i: number, change: Partial<S>) =>
    setSteps((cur) => cur.map((s, j) => (j === i ? { ...s, ...change } : s)));
  return { steps, setSteps, setStep };
}

/**
 * The steps as a numbered list of fieldsets ("Step 1", …), each with its fields and, when there
 * are several, "Remove step n"; then "Add a step" (disabled once `canAdd` is false).
 */
export function StepList<S>({
  steps,
  setSteps,
  newStep,
  canAdd = true,
  children,
}: {
  steps: readonly S[];
  setSteps: Dispatch<StateUpdater<S[]>>;
  newStep: () => S;
  canAdd?: boolean;
  children: (step: S, i: number) => ComponentChildren;
}) {
  return (
    <>
      <ol class="steps">
        {steps.map((s, i) => (
          <li key={i}>
            <fieldset>
              <legend>Step {i + 1}</legend>
              {children(s, i)}
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
          disabled={!canAdd}
          onClick={() => setSteps((cur) => [...cur, newStep()])}
        >
          Add a step
        </button>
      </div>
    </>
  );
}

/** "<legend>": the form (`formLabel`) or JSON; `onJson` is when the user asks for the JSON. */
export function WrittenAs({
  legend,
  formLabel,
  json,
  onForm,
  onJson,
}: {
  legend: string;
  formLabel: string;
  json: boolean;
  onForm: () => void;
  onJson: () => void;
}) {
  return (
    <fieldset class="segmented">
      <legend>{legend}</legend>
      <button type="button" aria-pressed={!json} onClick={onForm}>
        {formLabel}
      </button>
      <button type="button" aria-pressed={json} onClick={onJson}>
        JSON
      </button>
    </fieldset>
  );
}

/** A JSON textarea `id` with its label, and its help (`children`) as `#<id>-help`. */
export function JsonField({
  id,
  label,
  rows,
  value,
  onInput,
  children,
}: {
  id: string;
  label: string;
  rows: number;
  value: string;
  onInput: (value: string) => void;
  children: ComponentChildren;
}) {
  return (
    <>
      <label for={id}>{label}</label>
      <textarea
        id={id}
        rows={rows}
        spellcheck={false}
        aria-describedby={`${id}-help`}
        value={value}
        onInput={(e) => onInput(e.currentTarget.value)}
      />
      <p class="muted" id={`${id}-help`}>
        {children}
      </p>
    </>
  );
}

/** Why a thing opened as JSON rather than in its form (nothing when there is no such note). */
export function JsonNote({ note }: { note: string | undefined }) {
  return note === undefined ? null : (
    <p class="notice" data-testid="json-note">
      {note}
    </p>
  );
}
