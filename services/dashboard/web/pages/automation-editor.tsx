import { INBOUND_EVENT_TYPE, EVENT_TYPES as STREAM_TYPES } from '@tern/contracts/event-types';
import { useState } from 'preact/hooks';
import { patch, post } from '../api.js';
import {
  JsonField,
  JsonNote,
  PropertyOptions,
  StepList,
  TemplateSelect,
  useProperties,
  useSteps,
  useTemplates,
  WrittenAs,
} from '../kit/editor.js';
import { Check, Field, Options, PanelForm } from '../kit/form.js';
import type { Automation } from '../types.js';
import { useActionError } from '../ui.js';
import {
  emptyStep,
  readSteps,
  STEP_KINDS,
  type StepDraft,
  type StepKind,
  stepsOf,
} from './automation-steps.js';

/** The triggers offered (any custom event name typed in works too). */
const TRIGGERS = ['contact.created', 'contact.updated', ...STREAM_TYPES, INBOUND_EVENT_TYPE];

/**
 * An automation (new or existing): its name, sender, trigger and steps — as a simple list of
 * steps, or as the API's JSON (branches: `then`/`else` of `waitFor` and `if`). Saved as a whole.
 * An existing one opens in the form when the form can write its steps, else as JSON with why.
 */
export function AutomationEditor({
  existing,
  onSaved,
}: {
  existing?: Automation;
  onSaved: (a: Automation) => void;
}) {
  const [name, setName] = useState(existing?.name ?? '');
  const [from, setFrom] = useState(existing?.from ?? '');
  const [trigger, setTrigger] = useState(existing?.trigger.event ?? 'contact.created');
  const [enabled, setEnabled] = useState(existing?.enabled ?? true);
  const [read] = useState(() => (existing ? readSteps(existing.steps) : { drafts: [emptyStep()] }));
  const [mode, setMode] = useState<'form' | 'json'>('reason' in read ? 'json' : 'form');
  const [note, setNote] = useState('reason' in read ? read.reason : undefined);
  const { steps, setSteps, setStep } = useSteps<StepDraft>(() =>
    'drafts' in read ? read.drafts : [emptyStep()],
  );
  const [json, setJson] = useState(existing ? JSON.stringify(existing.steps, null, 2) : '');
  const templates = useTemplates();
  const properties = useProperties();
  const saving = useActionError();
  const formSteps = () => stepsOf(steps, new Map((properties.data ?? []).map((p) => [p.name, p.type])));

  const save = async () => {
    let parsed: unknown;
    if (mode === 'json') {
      try {
        parsed = JSON.parse(json);
      } catch {
        saving.setError('The steps are not valid JSON.');
        return;
      }
    } else parsed = formSteps();
    const body = { name, trigger: { event: trigger.trim() }, steps: parsed, ...(from ? { from } : {}) };
    await saving.run(async () => {
      const res = existing
        ? await patch<Automation>(`/automations/${encodeURIComponent(existing.id)}`, body)
        : await post<Automation>('/automations', { ...body, enabled });
      onSaved(res.body);
    });
  };

  const id = (i: number, f: string) => `astep-${i}-${f}`;
  return (
    <PanelForm
      id="aut-form"
      title={existing ? 'Edit the automation' : 'Automation'}
      submit={existing ? 'Save automation' : 'Create automation'}
      error={saving.error}
      onSubmit={save}
    >
      <Field id="aut-name" label="Automation name" required maxLength={100} value={name} onInput={setName} />
      <Field
        id="aut-from"
        label="From (needed when a step sends)"
        placeholder="Acme <hello@acme.test>"
        value={from}
        onInput={setFrom}
      />
      <Field
        id="aut-trigger"
        label="Trigger event"
        required
        list="aut-triggers"
        aria-describedby="aut-trigger-help"
        value={trigger}
        onInput={setTrigger}
      />
      <datalist id="aut-triggers">
        {TRIGGERS.map((t) => (
          <option key={t} value={t} />
        ))}
      </datalist>
      <p class="muted" id="aut-trigger-help">
        A contact change, a delivery event of mail to the contact, <code>email.received</code> (mail from the
        contact) or the name of a custom event you post to <code>POST /events/track</code>.
      </p>
      {!existing && (
        <Check checked={enabled} onChange={setEnabled}>
          Enabled: start a run for each trigger from now on
        </Check>
      )}
      <WrittenAs
        legend="Steps written as"
        formLabel="Simple steps"
        json={mode === 'json'}
        onForm={() => {
          // The JSON written so far, in the form when the form can write it. When it cannot, it stays
          // JSON (with why): the form would start empty and a save would lose the steps.
          if (mode === 'json' && json.trim() !== '') {
            const parsed = parseJson(json);
            const read =
              parsed === undefined ? { reason: 'The steps are not valid JSON.' } : readSteps(parsed);
            if ('reason' in read) {
              setNote(read.reason);
              return;
            }
            setSteps(read.drafts);
          }
          setNote(undefined);
          setMode('form');
        }}
        onJson={() => {
          if (mode === 'form') setJson(JSON.stringify(formSteps(), null, 2));
          setMode('json');
        }}
      />
      {mode === 'json' && <JsonNote note={note} />}
      {mode === 'json' ? (
        <JsonField id="aut-json" label="Steps (JSON)" rows={10} value={json} onInput={setJson}>
          An array of <code>{'{ delay: "P1D" }'}</code>, <code>{'{ send: templateId }'}</code>,{' '}
          <code>{'{ waitFor: { event, timeout }, then?, else? }'}</code>,{' '}
          <code>{'{ if: filter, then?, else? }'}</code>, <code>{'{ update: { property: value } }'}</code>.
        </JsonField>
      ) : (
        <StepList steps={steps} setSteps={setSteps} newStep={emptyStep}>
          {(s, i) => (
            <>
              <label for={id(i, 'kind')}>Step {i + 1} kind</label>
              <select
                id={id(i, 'kind')}
                value={s.kind}
                onChange={(e) => setStep(i, { kind: e.currentTarget.value as StepKind, a: '', b: '' })}
              >
                <Options items={Object.entries(STEP_KINDS)} value={([k]) => k} label={([, label]) => label} />
              </select>
              {s.kind === 'send' && (
                <>
                  <label for={id(i, 'a')}>Step {i + 1} template</label>
                  <TemplateSelect
                    id={id(i, 'a')}
                    value={s.a}
                    onChange={(a) => setStep(i, { a })}
                    templates={templates.data}
                  />
                </>
              )}
              {s.kind === 'delay' && (
                <Field
                  id={id(i, 'a')}
                  label={`Step ${i + 1} duration (ISO 8601, e.g. P1D, PT30M)`}
                  required
                  value={s.a}
                  onInput={(a) => setStep(i, { a })}
                />
              )}
              {s.kind === 'waitFor' && (
                <>
                  <Field
                    id={id(i, 'a')}
                    label={`Step ${i + 1} event`}
                    required
                    list="aut-triggers"
                    value={s.a}
                    onInput={(a) => setStep(i, { a })}
                  />
                  <Field
                    id={id(i, 'b')}
                    label={`Step ${i + 1} timeout (ISO 8601)`}
                    required
                    value={s.b}
                    onInput={(b) => setStep(i, { b })}
                  />
                </>
              )}
              {s.kind === 'update' && (
                <>
                  <label for={id(i, 'a')}>Step {i + 1} property</label>
                  <select
                    id={id(i, 'a')}
                    required
                    value={s.a}
                    onChange={(e) => setStep(i, { a: e.currentTarget.value })}
                  >
                    <option value="">Choose a property</option>
                    <PropertyOptions properties={properties.data} />
                  </select>
                  <Field
                    id={id(i, 'b')}
                    label={`Step ${i + 1} value`}
                    value={s.b}
                    onInput={(b) => setStep(i, { b })}
                  />
                </>
              )}
            </>
          )}
        </StepList>
      )}
    </PanelForm>
  );
}

/** The JSON text's value, or undefined when it is none. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
