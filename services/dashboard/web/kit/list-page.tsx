// The list pages' shape: a title with its "New …" button, the project note, a paged list.
import type { ComponentChildren, ComponentType } from 'preact';
import { useState } from 'preact/hooks';
import { get, query } from '../api.js';
import { TenantWide } from '../project.js';
import { navigate, routeHref } from '../router.js';
import { EmptyState, ListTable, listOf, pagerOf } from '../table.js';
import type { List } from '../types.js';
import { Page, useLoad, useRowActions } from '../ui.js';
import { Options } from './form.js';

/**
 * `path?page=&limit=20` (then `filters`, as the API's query) read a page at a time: the load, the
 * page, and the pager under the list (`pages`: its accessible name); `table`: ListTable's `load`,
 * `items` and `pager`.
 */
export function usePagedList<T>(path: string, pages: string, filters: Record<string, string> = {}) {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => get<List<T>>(`${path}${query({ page, limit: 20, ...filters })}`).then((r) => r.body),
    [path, page, ...Object.values(filters)],
  );
  const pager = pagerOf(list.data?.meta, setPage, pages);
  return { list, setPage, pager, table: { ...listOf(list), pager } };
}

/**
 * A paged list narrowed by its items' state: the state chosen, the props of its `StateFilter`
 * (`id`, `states`; a change goes back to the first page), and the paged list.
 */
export function useStateList<T>(path: string, pages: string, id: string, states: readonly string[]) {
  const [state, setState] = useState('');
  const paged = usePagedList<T>(path, pages, { state });
  const onChange = (st: string) => {
    setState(st);
    paged.setPage(1);
  };
  return { ...paged, state, filter: { id, states, value: state, onChange } };
}

/** `list` with a capital: the label of the way back to `/<list>`. */
export const listLabel = (list: string) => `${list[0]?.toUpperCase()}${list.slice(1)}`;

/** What a `/<list>` page shows of its items: its columns, what to do first when there is none, the cells after an item's name. */
export interface ListSpec<T> {
  columns: readonly string[];
  /** Under "No <noun> yet.". */
  help: ComponentChildren;
  /** `action`: the row actions (their error above the list; the list read again after each). */
  cells: (item: T, action: ReturnType<typeof useRowActions>) => ComponentChildren;
}

/**
 * The pages of `/<noun>s`: the list at `#/<list>` (its title, a "New …" button, the project note, a
 * page at a time: a row per item, its name a link to its page, then `spec`'s cells), the `Editor` of
 * a new `noun` at `#/<list>/new` (then the page of what it saved), the `Detail` of one at `#/<list>/<id>`.
 */
export function listRoutes<T extends { id: string; name: string }>(
  noun: string,
  spec: ListSpec<T>,
  Editor: ComponentType<{ onSaved: (saved: T) => void }>,
  Detail: ComponentType<{ id: string }>,
) {
  const list = `${noun}s`;
  const title = listLabel(list);
  const href = (t: T) => routeHref(`/${list}/${encodeURIComponent(t.id)}`);
  function List() {
    const { list: load, table } = usePagedList<T>(`/${list}`, `${listLabel(noun)} pages`);
    const action = useRowActions(load.reload);
    return (
      <TenantPage title={title} actions={<NewLink to={`/${list}/new`} label={`New ${noun}`} />}>
        <ListTable
          {...table}
          what={list}
          columns={spec.columns}
          actionError={action.error}
          empty={
            <EmptyState title={`No ${noun} yet.`}>
              <p>{spec.help}</p>
            </EmptyState>
          }
          row={(t) => (
            <tr key={t.id} data-id={t.id}>
              <th scope="row">
                <a href={href(t)}>{t.name}</a>
              </th>
              {spec.cells(t, action)}
            </tr>
          )}
        />
      </TenantPage>
    );
  }
  return function ListRoutes({ id }: { id: string }) {
    if (id === '') return <List />;
    if (id === 'new')
      return (
        <NewPage title={`New ${noun}`} back={`/${list}`} backLabel={title}>
          <Editor onSaved={(t) => navigate(`/${list}/${encodeURIComponent(t.id)}`)} />
        </NewPage>
      );
    return <Detail id={id} />;
  };
}

/** A page of the whole tenant: its title (and `actions`), the project note, `children`. */
export function TenantPage({
  title,
  actions,
  children,
}: {
  title: string;
  actions?: ComponentChildren;
  children: ComponentChildren;
}) {
  return (
    <Page title={title} actions={actions}>
      <TenantWide what={title} />
      {children}
    </Page>
  );
}

/** A list page's "New …" button. */
function NewLink({ to, label }: { to: string; label: string }) {
  return (
    <a class="button" href={routeHref(to)}>
      {label}
    </a>
  );
}

/** The link back to a list: `← Automations`. */
export function BackLink({ to, label }: { to: string; label: string }) {
  return <a href={routeHref(to)}>← {label}</a>;
}

/** A "new …" page: its title, the way back to the list, the editor. */
export function NewPage({
  title,
  back,
  backLabel,
  children,
}: {
  title: string;
  back: string;
  backLabel: string;
  children: ComponentChildren;
}) {
  return (
    <Page title={title} actions={<BackLink to={back} label={backLabel} />}>
      {children}
    </Page>
  );
}

/** A list's state filter: `All`, then each state (the list goes back to its first page). */
export function StateFilter({
  id,
  states,
  value,
  onChange,
}: {
  id: string;
  states: readonly string[];
  value: string;
  onChange: (state: string) => void;
}) {
  return (
    <div class="filters">
      <label for={id}>State</label>
      <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">All</option>
        <Options items={states} />
      </select>
    </div>
  );
}
