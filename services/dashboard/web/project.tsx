import { type ComponentChildren, createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { get, query } from './api.js';
import { PROJECT_PARAM, type Route } from './router.js';
import type { List, Project } from './types.js';
import { useLoad } from './ui.js';

/**
 * The project switcher (SPEC §16): the project named by `?project=` in the address narrows the
 * overview (`/analytics/*?projectId=`), the logs (`/emails/logs?projectId=`), sending and the API
 * keys to one project. Everything else a tenant owns (templates, contacts, campaigns…) belongs to
 * the whole tenant: those pages say so while a project is chosen.
 */
export interface ProjectScope {
  /** The chosen project's id, or undefined for the whole tenant. */
  id: string | undefined;
  /** Its name once known (the id until then, or when the project is gone). */
  name: string | undefined;
  /** The projects the switcher offers (the first 100; the chosen one is always among them). */
  projects: Project[];
  /** Read the projects again (after a create, rename or delete). */
  reload(): void;
}

const SWITCHER_LIMIT = 100;
const Scope = createContext<ProjectScope>({ id: undefined, name: undefined, projects: [], reload: () => {} });

export const useProject = () => useContext(Scope);

export function ProjectProvider({ route, children }: { route: Route; children: ComponentChildren }) {
  const id = route.params.get(PROJECT_PARAM) || undefined;
  const list = useLoad(
    () => get<List<Project>>(`/projects${query({ limit: SWITCHER_LIMIT })}`).then((r) => r.body.data),
    [],
  );
  const listed = list.data ?? [];
  const known = listed.find((p) => p.id === id);
  // A link may name a project past the switcher's first page: read that one on its own.
  const single = useLoad(
    () =>
      id === undefined || known !== undefined || list.data === undefined
        ? Promise.resolve(undefined)
        : get<Project>(`/projects/${encodeURIComponent(id)}`).then(
            (r) => r.body,
            () => undefined,
          ),
    [id, known === undefined, list.data === undefined],
  );
  const chosen = known ?? single.data;
  const projects = chosen && !known ? [...listed, chosen] : listed;
  return (
    <Scope.Provider value={{ id, name: chosen?.name ?? id, projects, reload: list.reload }}>
      {children}
    </Scope.Provider>
  );
}

/** The header's `<select>`: "All projects" or one; the choice goes into the address. */
export function ProjectSwitcher({ route }: { route: Route }) {
  const scope = useProject();
  const choose = (value: string) => {
    const params = new URLSearchParams(route.params);
    // A page number or a cursor belongs to the list it came from: start the narrowed list afresh.
    params.delete('page');
    params.delete('cursor');
    if (value) params.set(PROJECT_PARAM, value);
    else params.delete(PROJECT_PARAM);
    const search = params.toString();
    // `navigate` would put the current project back: set the address as chosen.
    window.location.hash = `${route.path}${search ? `?${search}` : ''}`;
  };
  return (
    <div class="switcher">
      <label for="project-switch">Project</label>
      <select id="project-switch" value={scope.id ?? ''} onChange={(e) => choose(e.currentTarget.value)}>
        <option value="">All projects</option>
        {scope.projects.map((p) => (
          <option key={p.id} value={p.id}>
            {p.name}
          </option>
        ))}
        {scope.id !== undefined && !scope.projects.some((p) => p.id === scope.id) && (
          <option value={scope.id}>{scope.id}</option>
        )}
      </select>
    </div>
  );
}

/** A page that belongs to the whole tenant: while a project is chosen, it says it is not narrowed. */
export function TenantWide({ what }: { what: string }) {
  const scope = useProject();
  if (scope.id === undefined) return null;
  return (
    <p class="muted" data-testid="tenant-wide">
      {what} belong to the whole tenant: the project “{scope.name}” narrows the overview, the logs, sending
      and the API keys, not this page.
    </p>
  );
}
