import type { JSX } from 'preact';
import { ApiKeysPage } from './pages/api-keys.js';
import { AutomationsPage } from './pages/automations.js';
import { CampaignsPage } from './pages/campaigns.js';
import { ContactsPage } from './pages/contacts.js';
import { DeliverabilityPage } from './pages/deliverability.js';
import { DomainsPage } from './pages/domains.js';
import { EmailPage } from './pages/email.js';
import { EventsPage } from './pages/events.js';
import { InboundPage } from './pages/inbound.js';
import { LogsPage } from './pages/logs.js';
import { OverviewPage } from './pages/overview.js';
import { ProjectsPage } from './pages/projects.js';
import { PropertiesPage } from './pages/properties.js';
import { SegmentsPage } from './pages/segments.js';
import { SendPage } from './pages/send.js';
import { SequencesPage } from './pages/sequences.js';
import { SettingsPage } from './pages/settings.js';
import { SuppressionsPage } from './pages/suppressions.js';
import { TemplatesPage } from './pages/templates.js';
import { TopicsPage } from './pages/topics.js';
import { WebhooksPage } from './pages/webhooks.js';
import type { Route } from './router.js';
import type { Session } from './session.js';

/** What a page is given: the address, the session, and the part of the path after its own. */
export interface PageContext {
  route: Route;
  session: Session;
  /** `/campaigns/cmp_x` → `cmp_x` (decoded); '' on the section's own path. */
  rest: string;
}

export interface PageDef {
  /** The section's path (`/campaigns`); its sub-paths (`/campaigns/<id>`) are its own too. */
  path: string;
  /** The navigation label; a page without one is reached by links only (an email). */
  label?: string;
  /** The navigation item lit while this page shows, when it is not the page's own (an email → Logs). */
  navPath?: string;
  render(ctx: PageContext): JSX.Element;
}

/**
 * Every page, in navigation order. A new page is one entry here (and its file under `pages/`):
 * the navigation, the router and the focus handling follow.
 */
export const PAGES: readonly PageDef[] = [
  { path: '/', label: 'Overview', render: ({ route }) => <OverviewPage route={route} /> },
  { path: '/logs', label: 'Logs', render: ({ route }) => <LogsPage route={route} /> },
  { path: '/deliverability', label: 'Deliverability', render: () => <DeliverabilityPage /> },
  { path: '/emails', navPath: '/logs', render: ({ rest }) => <EmailPage id={rest} /> },
  { path: '/events', label: 'Events', render: ({ route }) => <EventsPage route={route} /> },
  { path: '/send', label: 'Send', render: () => <SendPage /> },
  {
    path: '/campaigns',
    label: 'Campaigns',
    render: ({ rest }) => <CampaignsPage id={rest} />,
  },
  {
    path: '/sequences',
    label: 'Sequences',
    render: ({ rest }) => <SequencesPage id={rest} />,
  },
  {
    path: '/automations',
    label: 'Automations',
    render: ({ rest }) => <AutomationsPage id={rest} />,
  },
  { path: '/templates', label: 'Templates', render: ({ session }) => <TemplatesPage session={session} /> },
  { path: '/contacts', label: 'Contacts', render: () => <ContactsPage /> },
  { path: '/properties', label: 'Properties', render: () => <PropertiesPage /> },
  { path: '/segments', label: 'Segments', render: ({ rest }) => <SegmentsPage id={rest} /> },
  { path: '/topics', label: 'Topics', render: () => <TopicsPage /> },
  { path: '/suppressions', label: 'Suppressions', render: () => <SuppressionsPage /> },
  { path: '/domains', label: 'Domains', render: ({ session }) => <DomainsPage session={session} /> },
  { path: '/webhooks', label: 'Webhooks', render: () => <WebhooksPage /> },
  { path: '/inbound', label: 'Inbound', render: ({ rest }) => <InboundPage id={rest} /> },
  { path: '/api-keys', label: 'API keys', render: ({ session }) => <ApiKeysPage session={session} /> },
  { path: '/projects', label: 'Projects', render: () => <ProjectsPage /> },
  { path: '/settings', label: 'Settings', render: ({ session }) => <SettingsPage session={session} /> },
];

/** The page of a path and the rest of the path after the page's own (`''` on the page itself). */
export function pageOf(path: string): { page: PageDef; rest: string } | undefined {
  if (path === '/') return { page: PAGES[0]!, rest: '' };
  const section = `/${path.split('/')[1] ?? ''}`;
  const page = PAGES.find((p) => p.path === section && p.path !== '/');
  if (!page) return undefined;
  const tail = path.slice(section.length).replace(/^\//, '');
  // A malformed escape in a pasted address is a page that does not exist, not an exception.
  try {
    return { page, rest: decodeURIComponent(tail) };
  } catch {
    return undefined;
  }
}
