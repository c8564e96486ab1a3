import { useEffect, useRef, useState } from 'preact/hooks';
import { configureApi } from './api.js';
import { SignInPage } from './pages/sign-in.js';
import { ProjectProvider, ProjectSwitcher } from './project.js';
import { routeHref, useRoute } from './router.js';
import { PAGES, pageOf } from './routes.js';
import { adoptFragmentToken, clearSession, loadSession, type Session, saveSession } from './session.js';

function initial(): { session: Session | undefined; notice: string | undefined } {
  const refused = adoptFragmentToken();
  return { session: loadSession(), notice: refused };
}

export function App() {
  const [{ session, notice }, setState] = useState(initial);
  const route = useRoute();

  const signOut = (message?: string) => {
    clearSession();
    setState({ session: undefined, notice: message });
  };
  configureApi({
    token: session?.token,
    onUnauthorized: () => signOut('Your session has ended (the API answered 401). Sign in again.'),
  });

  // A token put in the address bar of an open tab.
  useEffect(() => {
    const onHash = () => {
      if (window.location.hash.startsWith('#token=')) setState(initial());
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  // After a route change, move focus to the new page's heading, so screen readers and keyboards
  // start there. Not on the first load: there Tab starts at the top, on the skip link.
  const firstRoute = useRef(true);
  useEffect(() => {
    if (firstRoute.current) {
      firstRoute.current = false;
      return;
    }
    document.getElementById('page-title')?.focus({ preventScroll: true });
  }, [route.path]);

  if (!session) {
    return (
      <SignInPage
        notice={notice}
        onSignIn={(s) => {
          saveSession(s);
          setState({ session: s, notice: undefined });
        }}
      />
    );
  }

  const found = pageOf(route.path);
  const lit = found ? (found.page.navPath ?? found.page.path) : undefined;
  const page = found ? (
    found.page.render({ route, session, rest: found.rest })
  ) : (
    <section aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>
        Not found
      </h1>
      <p>
        No page at <code>{route.path}</code>. <a href={routeHref('/')}>Go to the overview.</a>
      </p>
    </section>
  );

  return (
    <ProjectProvider route={route}>
      {/* A button, not an anchor: `#main` would be taken for a route by the hash router. */}
      <button type="button" class="skip" onClick={() => document.getElementById('page-title')?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <div class="brand">
          <span aria-hidden="true">◤</span> Tern
        </div>
        <nav aria-label="Dashboard">
          <ul>
            {PAGES.filter((p) => p.label !== undefined).map((p) => (
              <li key={p.path}>
                <a href={routeHref(p.path)} aria-current={lit === p.path ? 'page' : undefined}>
                  {p.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <ProjectSwitcher route={route} />
        <div class="who">
          <span data-testid="tenant">
            {session.tenantId} · {session.role}
          </span>
          <button type="button" class="link" onClick={() => signOut('Signed out.')}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main">{page}</main>
    </ProjectProvider>
  );
}
