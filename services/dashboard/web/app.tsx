import { useEffect, useRef, useState } from 'preact/hooks';
import { configureApi } from './api.js';
import { ApiKeysPage } from './pages/api-keys.js';
import { ContactsPage } from './pages/contacts.js';
import { DomainsPage } from './pages/domains.js';
import { EmailPage } from './pages/email.js';
import { LogsPage } from './pages/logs.js';
import { OverviewPage } from './pages/overview.js';
import { SendPage } from './pages/send.js';
import { SignInPage } from './pages/sign-in.js';
import { SuppressionsPage } from './pages/suppressions.js';
import { TemplatesPage } from './pages/templates.js';
import { WebhooksPage } from './pages/webhooks.js';
import { useRoute } from './router.js';
import { adoptFragmentToken, clearSession, loadSession, type Session, saveSession } from './session.js';

const NAV = [
  { path: '/', label: 'Overview' },
  { path: '/logs', label: 'Logs' },
  { path: '/send', label: 'Send' },
  { path: '/templates', label: 'Templates' },
  { path: '/api-keys', label: 'API keys' },
  { path: '/webhooks', label: 'Webhooks' },
  { path: '/suppressions', label: 'Suppressions' },
  { path: '/contacts', label: 'Contacts' },
  { path: '/domains', label: 'Domains' },
];

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

  const section = `/${route.path.split('/')[1] ?? ''}`;
  let page: preact.JSX.Element;
  if (route.path === '/') page = <OverviewPage />;
  else if (route.path === '/logs') page = <LogsPage route={route} />;
  else if (route.path.startsWith('/emails/'))
    page = <EmailPage id={decodeURIComponent(route.path.slice('/emails/'.length))} />;
  else if (route.path === '/send') page = <SendPage />;
  else if (route.path === '/templates') page = <TemplatesPage session={session} />;
  else if (route.path === '/api-keys') page = <ApiKeysPage session={session} />;
  else if (route.path === '/webhooks') page = <WebhooksPage />;
  else if (route.path === '/suppressions') page = <SuppressionsPage />;
  else if (route.path === '/contacts') page = <ContactsPage />;
  else if (route.path === '/domains') page = <DomainsPage session={session} />;
  else
    page = (
      <section aria-labelledby="page-title">
        <h1 id="page-title" tabIndex={-1}>
          Not found
        </h1>
        <p>
          No page at <code>{route.path}</code>. <a href="#/">Go to the overview.</a>
        </p>
      </section>
    );

  return (
    <>
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
            {NAV.map((n) => (
              <li key={n.path}>
                <a
                  href={`#${n.path}`}
                  aria-current={
                    section === n.path || (n.path === '/logs' && section === '/emails') ? 'page' : undefined
                  }
                >
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
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
    </>
  );
}
