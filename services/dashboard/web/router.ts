import { useEffect, useState } from 'preact/hooks';

/** Hash routes (`#/logs`, `#/emails/<id>`): the page is one static file, so the server needs none. */
export interface Route {
  path: string;
  params: URLSearchParams;
}

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

export function navigate(path: string): void {
  window.location.hash = path;
}
