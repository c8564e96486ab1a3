// The list pages' shape: a title with its "New …" button, the project note, a paged list.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { get, query } from '../api.js';
import { TenantWide } from '../project.js';
import { routeHref } from '../router.js';
import { pagerOf } from '../table.js';
import type { List } from '../types.js';
import { Page, useLoad } from '../ui.js';

/**
 * `path?page=&limit=20` (then `filters`, as the API's query) read a page at a time: the load, the
 * page, and the pager under the list (`pages`: its accessible name).
 */
export function usePagedList<T>(path: string, pages: string, filters: Record<string, string> = {}) {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => get<List<T>>(`${path}${query({ page, limit: 20, ...filters })}`).then((r) => r.body),
    [path, page, ...Object.values(filters)],
  );
  return { list, setPage, pager: pagerOf(list.data?.meta, setPage, pages) };
}

/** A tenant-wide list page: its title, a "New …" button to `newHref`, the project note. */
export function ListPage({
  title,
  newHref,
  newLabel,
  children,
}: {
  title: string;
  newHref: string;
  newLabel: string;
  children: ComponentChildren;
}) {
  return (
    <Page
      title={title}
      actions={
        <a class="button" href={routeHref(newHref)}>
          {newLabel}
        </a>
      }
    >
      <TenantWide what={title} />
      {children}
    </Page>
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
        {states.map((st) => (
          <option key={st} value={st}>
            {st}
          </option>
        ))}
      </select>
    </div>
  );
}
