import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, post, query } from '../api.js';
import { PropertyOptions } from '../kit/editor.js';
import { Check, Field, Options } from '../kit/form.js';
import type { ContactProperty, List, SegmentFilter, Topic } from '../types.js';
import { formatNumber, useLoad } from '../ui.js';
import { type Clause, ENGAGEMENTS, emptyClause, KINDS, type Kind, OPS } from './segment-clauses.js';

/**
 * The live count of a filter (`POST /segments/count`), asked again 400 ms after the last change;
 * the API's refusal of a filter (a property not defined, a value of the wrong type) is shown.
 */
export function LiveCount({ filter }: { filter: SegmentFilter | null }) {
  const [state, setState] = useState<{ total?: number; error?: string; counting: boolean }>({
    counting: false,
  });
  const key = filter === null ? '' : JSON.stringify(filter);
  useEffect(() => {
    if (filter === null) {
      setState({ counting: false });
      return;
    }
    let live = true;
    setState((s) => ({ ...s, counting: true }));
    const timer = setTimeout(() => {
      post<{ total: number }>('/segments/count', { filter }).then(
        (r) => live && setState({ total: r.body.total, counting: false }),
        (e: unknown) =>
          live && setState({ error: e instanceof ApiError ? e.message : String(e), counting: false }),
      );
    }, 400);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [key]);
  return (
    <p class="live-count" role="status" data-testid="live-count">
      {filter === null
        ? 'Complete the conditions to see how many contacts match.'
        : state.error
          ? `Not counted: ${state.error}`
          : state.total === undefined || state.counting
            ? 'Counting…'
            : `${formatNumber(state.total)} ${state.total === 1 ? 'contact matches' : 'contacts match'} now`}
    </p>
  );
}

/** The rows of conditions of the segment builder, and how they combine. */
export function ClauseEditor({
  clauses,
  setClauses,
  match,
  setMatch,
  properties,
}: {
  clauses: Clause[];
  setClauses: (update: (cur: Clause[]) => Clause[]) => void;
  match: 'and' | 'or';
  setMatch: (m: 'and' | 'or') => void;
  properties: readonly ContactProperty[] | undefined;
}) {
  const topics = useLoad(
    () => get<List<Topic>>(`/topics${query({ limit: 100 })}`).then((r) => r.body.data),
    [],
  );
  const set = (i: number, change: Partial<Clause>) =>
    setClauses((cur) => cur.map((c, j) => (j === i ? { ...c, ...change } : c)));
  return (
    <>
      <label for="seg-match">Contacts matching</label>
      <select id="seg-match" value={match} onChange={(e) => setMatch(e.currentTarget.value as 'and' | 'or')}>
        <option value="and">all of the conditions</option>
        <option value="or">any of the conditions</option>
      </select>
      <ol class="steps">
        {clauses.map((c, i) => {
          const id = (f: string) => `clause-${i}-${f}`;
          const type = properties?.find((p) => p.name === c.subject)?.type;
          return (
            <li key={i}>
              <fieldset>
                <legend>Condition {i + 1}</legend>
                <label for={id('kind')}>Condition {i + 1} kind</label>
                <select
                  id={id('kind')}
                  value={c.kind}
                  onChange={(e) =>
                    set(i, { kind: e.currentTarget.value as Kind, subject: '', value: '', op: 'eq' })
                  }
                >
                  <Options items={Object.entries(KINDS)} value={([k]) => k} label={([, label]) => label} />
                </select>
                {c.kind === 'property' && (
                  <>
                    <label for={id('subject')}>Condition {i + 1} property</label>
                    <select
                      id={id('subject')}
                      required
                      value={c.subject}
                      onChange={(e) => set(i, { subject: e.currentTarget.value })}
                    >
                      <option value="">Choose a property</option>
                      <PropertyOptions properties={properties} />
                    </select>
                    <label for={id('op')}>Condition {i + 1} comparison</label>
                    <select
                      id={id('op')}
                      value={c.op}
                      onChange={(e) => set(i, { op: e.currentTarget.value as Clause['op'] })}
                    >
                      <Options items={OPS} />
                    </select>
                    {c.op !== 'exists' && (
                      <>
                        <label for={id('value')}>Condition {i + 1} value</label>
                        {type === 'boolean' ? (
                          <select
                            id={id('value')}
                            value={c.value}
                            onChange={(e) => set(i, { value: e.currentTarget.value })}
                          >
                            <option value="">Choose</option>
                            <option value="true">true</option>
                            <option value="false">false</option>
                          </select>
                        ) : (
                          <input
                            id={id('value')}
                            inputMode={type === 'number' ? 'decimal' : 'text'}
                            placeholder={type === 'date' ? '2026-06-01' : undefined}
                            value={c.value}
                            onInput={(e) => set(i, { value: e.currentTarget.value })}
                          />
                        )}
                      </>
                    )}
                  </>
                )}
                {c.kind === 'topic' && (
                  <>
                    <label for={id('subject')}>Condition {i + 1} topic</label>
                    <select
                      id={id('subject')}
                      value={c.subject}
                      onChange={(e) => set(i, { subject: e.currentTarget.value })}
                    >
                      <option value="">Choose a topic</option>
                      <Options items={topics.data} value={(t) => t.id} label={(t) => t.name} />
                    </select>
                  </>
                )}
                {c.kind === 'engagement' && (
                  <>
                    <label for={id('subject')}>Condition {i + 1} engagement</label>
                    <select
                      id={id('subject')}
                      value={c.subject || 'opened'}
                      onChange={(e) => set(i, { subject: e.currentTarget.value })}
                    >
                      <Options items={ENGAGEMENTS} />
                    </select>
                    <Field
                      id={id('days')}
                      label={`Condition ${i + 1} days`}
                      type="number"
                      min={1}
                      max={365}
                      value={c.days}
                      onInput={(days) => set(i, { days })}
                    />
                  </>
                )}
                {(c.kind === 'audience' || c.kind === 'tag' || c.kind === 'campaign') && (
                  <Field
                    id={id('subject')}
                    label={`Condition ${i + 1} ${c.kind === 'campaign' ? 'campaign id' : c.kind}`}
                    value={c.subject}
                    onInput={(subject) => set(i, { subject })}
                  />
                )}
                <Check checked={c.not} onChange={(not) => set(i, { not })}>
                  Condition {i + 1} negated (not)
                </Check>
                <button
                  type="button"
                  class="secondary"
                  onClick={() => setClauses((cur) => cur.filter((_, j) => j !== i))}
                >
                  Remove condition {i + 1}
                </button>
              </fieldset>
            </li>
          );
        })}
      </ol>
      <div class="row">
        <button type="button" class="secondary" onClick={() => setClauses((cur) => [...cur, emptyClause()])}>
          Add a condition
        </button>
      </div>
    </>
  );
}
