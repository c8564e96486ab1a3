import { useEffect, useState } from 'preact/hooks';

/** Hash routes (`#/logs`, `#/emails/<id>`): the page is one static file, so the server needs none. */
export interface Route {
  path: string;
  params: URLSearchParams;
}

/**
 * The one parameter every route carries on: the project the views are narrowed to
 * (`#/logs?project=prj_…`), so a link shares the view it was copied from.
 */
export const PROJECT_PARAM = 'project';

function current(): Route {
  const raw = window.location.hash.replace(/^#/, '') || '/';
  const [path = '/', search = ''] = raw.split('?');
  return { path: path || '/', params: new URLSearchParams(search) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const onChange = () => setRoute(current());
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

/** The project of the current address, or undefined for the whole tenant. */
export const currentProject = (): string | undefined => current().params.get(PROJECT_PARAM) || undefined;

/**
 * `path` (`/logs?page=2`) with the current project added unless it names one itself: every link
 * and every navigation of the app goes through this, so the project follows the user around.
 */
export function withProject(path: string, project = currentProject()): string {
  if (project === undefined) return path;
  const [base = '/', search = ''] = path.split('?');
  const params = new URLSearchParams(search);
  if (params.has(PROJECT_PARAM)) return path;
  params.set(PROJECT_PARAM, project);
  return `${base}?${params.toString()}`;
}

/** The `href` of an in-app link (`#/…`), keeping the project. */
export const routeHref = (path: string) => `#${withProject(path)}`;

/**
 * Sets some parameters of the current address, keeping its path and the others (`''` or undefined
 * removes one): a view's choices live in the address, so Back, a bookmark or a shared link shows
 * the same view.
 */
export function setParams(route: Route, changes: Record<string, string | undefined>): void {
  const params = new URLSearchParams(route.params);
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === '') params.delete(k);
    else params.set(k, v);
  }
  const search = params.toString();
  window.location.hash = `${route.path}${search ? `?${search}` : ''}`;
}

export function navigate(path: string): void {
  window.location.hash = withProject(path);
}
