// The forms' pieces: a form in a panel, a labelled field (its text in, its text out), a menu's
// options, checkboxes.
import type { ComponentChildren, TextareaHTMLAttributes } from 'preact';
import { Alert, useActionError } from '../ui.js';

/**
 * A form in a panel: its heading (`h2#<id>`, the form's name), its fields (`children`), the error
 * of its last submit, the submit button (`submit`, disabled while `busy`). The page does not
 * reload: `onSubmit` is called instead.
 */
export function PanelForm({
  id,
  title,
  submit,
  error,
  busy,
  onSubmit,
  children,
}: {
  id: string;
  title: ComponentChildren;
  submit: ComponentChildren;
  error: string | undefined;
  busy?: boolean;
  onSubmit: () => unknown;
  children: ComponentChildren;
}) {
  return (
    <form
      class="panel"
      aria-labelledby={id}
      onSubmit={(e) => {
        e.preventDefault();
        void onSubmit();
      }}
    >
      <h2 id={id}>{title}</h2>
      {children}
      <Alert message={error} />
      <button type="submit" disabled={busy}>
        {submit}
      </button>
    </form>
  );
}

/**
 * A PanelForm with an error of its own: a submit clears it, awaits `onSubmit` and shows what it
 * threw.
 */
export function ActionForm({
  onSubmit,
  ...form
}: {
  id: string;
  title: ComponentChildren;
  submit: ComponentChildren;
  onSubmit: () => Promise<unknown>;
  children: ComponentChildren;
}) {
  const { error, run } = useActionError();
  return <PanelForm {...form} error={error} onSubmit={() => run(onSubmit)} />;
}

/** What an input of a field may say besides its id, value and input handler. */
interface InputAttrs {
  type?: 'email' | 'url' | 'number' | 'date' | 'datetime-local' | 'search';
  required?: boolean;
  maxLength?: number;
  min?: number;
  max?: number;
  step?: number;
  inputMode?: 'numeric';
  placeholder?: string;
  autoComplete?: string;
  spellcheck?: boolean;
  list?: string;
  'aria-describedby'?: string;
}

/** `<label for={id}>` and its input; `onInput` is given the text as typed. */
export function Field({
  id,
  label,
  value,
  onInput,
  ...attrs
}: InputAttrs & { id: string; label: ComponentChildren; value: string; onInput: (value: string) => void }) {
  return (
    <>
      <label for={id}>{label}</label>
      <input id={id} {...attrs} value={value} onInput={(e) => onInput(e.currentTarget.value)} />
    </>
  );
}

/** `<label for={id}>` and its textarea; `onInput` is given the text as typed. */
export function AreaField({
  id,
  label,
  value,
  onInput,
  ...attrs
}: Pick<TextareaHTMLAttributes, 'rows' | 'spellcheck' | 'required' | 'aria-describedby'> & {
  id: string;
  label: ComponentChildren;
  value: string;
  onInput: (value: string) => void;
}) {
  return (
    <>
      <label for={id}>{label}</label>
      <textarea id={id} {...attrs} value={value} onInput={(e) => onInput(e.currentTarget.value)} />
    </>
  );
}

/**
 * A menu's options, one per item: `value(item)` its value (and key), `label(item)` its text —
 * the item itself for a list of strings.
 */
export function Options<T>({
  items,
  value = String,
  label = value,
}: {
  items: readonly T[] | undefined;
  value?: (item: T) => string;
  label?: (item: T) => ComponentChildren;
}) {
  return (
    <>
      {items?.map((item) => (
        <option key={value(item)} value={value(item)}>
          {label(item)}
        </option>
      ))}
    </>
  );
}

/** A checkbox with its words after it (`label.check`). */
export function Check({
  checked,
  onChange,
  children,
  ...attrs
}: {
  checked: boolean;
  onChange: (checked: boolean) => void;
  children: ComponentChildren;
  name?: string;
  value?: string;
}) {
  return (
    <label class="check">
      <input
        type="checkbox"
        {...attrs}
        checked={checked}
        onChange={(e) => onChange(e.currentTarget.checked)}
      />
      {children}
    </label>
  );
}

/**
 * A fieldset of checkboxes, one per choice, `chosen` the ticked ones; a tick adds, an untick
 * removes. With a `name`, each checkbox has it and its choice as `value`.
 */
export function CheckList({
  legend,
  name,
  class: className,
  choices,
  chosen,
  onChange,
}: {
  legend: string;
  name?: string;
  class?: string;
  choices: readonly string[];
  chosen: readonly string[];
  onChange: (change: (cur: string[]) => string[]) => void;
}) {
  return (
    <fieldset class={className}>
      <legend>{legend}</legend>
      {choices.map((c) => (
        <Check
          key={c}
          {...(name === undefined ? {} : { name, value: c })}
          checked={chosen.includes(c)}
          onChange={(on) => onChange((cur) => (on ? [...cur, c] : cur.filter((x) => x !== c)))}
        >
          {c}
        </Check>
      ))}
    </fieldset>
  );
}
