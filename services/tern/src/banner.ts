export interface BannerInput {
  url: string;
  tenantId: string;
  dashboardJwt: string;
  /** `PUBLIC_URL` (default: the listen URL), where the dashboard is opened. */
  publicUrl: string;
  ingestToken: string;
  stores: { postgres: string; clickhouse: string; eventLog: string };
}

/** The first-run banner: where Tern listens and three commands that work as printed. */
export function renderBanner(b: BannerInput): string {
  const now = new Date().toISOString();
  const event = JSON.stringify({
    id: 'evt-demo-1',
    type: 'email.queued',
    tenantId: b.tenantId,
    emailId: 'email-demo-1',
    occurredAt: now,
    data: { toEmail: 'ada@example.com', subject: 'Hello from Tern' },
  });
  const send = JSON.stringify({
    from: 'Tern <hello@example.com>',
    to: 'delivered@sandbox.test',
    subject: 'Hello from Tern',
    html: '<p>It works. <a href="https://example.com">A tracked link</a></p>',
  });
  return [
    '',
    `  Tern is running at ${b.url}   (stores: ${b.stores.postgres}, ${b.stores.clickhouse}, ${b.stores.eventLog} log)`,
    '',
    `  Ingest token:            ${b.ingestToken}`,
    `  Dashboard JWT (${b.tenantId}, owner, 30 days):`,
    `    ${b.dashboardJwt}`,
    '',
    '  Open the dashboard (signed in as that owner):',
    `    ${b.publicUrl}/#token=${b.dashboardJwt}`,
    '',
    '  Post a delivery event:',
    `    curl -s -X POST '${b.url}/events' -H 'Authorization: Bearer ${b.ingestToken}' -H 'Content-Type: application/json' -d '${event}'`,
    '',
    '  Send an email (sandbox provider: nothing leaves the machine; see GET /emails/:id):',
    `    curl -s -X POST '${b.url}/emails/send' -H 'Authorization: Bearer ${b.dashboardJwt}' -H 'Content-Type: application/json' -d '${send}'`,
    '',
    '  Read analytics:',
    `    curl -s '${b.url}/analytics/summary?days=30' -H 'Authorization: Bearer ${b.dashboardJwt}'`,
    '',
    '  Send from your own domain (DKIM-signed): add it, publish the records it answers, then',
    `  POST /domains/<id>/verify (or use the dashboard's Domains page):`,
    `    curl -s -X POST '${b.url}/domains' -H 'Authorization: Bearer ${b.dashboardJwt}' -H 'Content-Type: application/json' -d '{"name":"example.com"}'`,
    '',
    `  API docs: ${b.url}/docs     Generated dev secrets are kept in DATA_DIR/dev-secrets.json.`,
    '',
  ].join('\n');
}
