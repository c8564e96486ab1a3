import { ListPage, ListRoutes, usePagedList } from '../kit/list-page.js';
import { routeHref } from '../router.js';
import { EmptyState, ListTable } from '../table.js';
import type { Campaign } from '../types.js';
import { formatDate, formatNumber, StatusBadge } from '../ui.js';
import { CampaignDetail } from './campaign-detail.js';
import { CampaignEditor } from './campaign-editor.js';

/** SPEC §15 campaigns: `#/campaigns` (list), `#/campaigns/new`, `#/campaigns/<id>`. */
export function CampaignsPage({ id }: { id: string }) {
  return (
    <ListRoutes
      id={id}
      list="campaigns"
      noun="campaign"
      List={CampaignList}
      Editor={CampaignEditor}
      Detail={CampaignDetail}
    />
  );
}

function CampaignList() {
  const { table } = usePagedList<Campaign>('/campaigns', 'Campaign pages');
  return (
    <ListPage title="Campaigns" newHref="/campaigns/new" newLabel="New campaign">
      <ListTable
        {...table}
        what="campaigns"
        label="Campaigns"
        testId="campaigns"
        columns={['Name', 'Status', 'Audience', 'Sent', 'When', 'Created']}
        empty={
          <EmptyState title="No campaign yet.">
            <p>
              A campaign sends one email to every subscribed contact of an audience. First give contacts an
              audience on the <a href={routeHref('/contacts')}>Contacts</a> page (or import them), then{' '}
              <a href={routeHref('/campaigns/new')}>create a campaign</a>.
            </p>
          </EmptyState>
        }
        row={(c) => (
          <tr key={c.id} data-id={c.id}>
            <th scope="row">
              <a href={routeHref(`/campaigns/${encodeURIComponent(c.id)}`)}>{c.name}</a>
            </th>
            <td>
              <StatusBadge status={c.status} />
            </td>
            <td>{c.audience}</td>
            <td class="num">
              {c.status === 'sending' || c.status === 'sent'
                ? `${formatNumber(c.stats.sent)} of ${formatNumber(c.stats.recipients)}`
                : '—'}
            </td>
            <td>
              <time dateTime={c.sentAt ?? c.scheduledAt ?? undefined}>
                {formatDate(c.sentAt ?? c.scheduledAt)}
              </time>
            </td>
            <td>
              <time dateTime={c.createdAt}>{formatDate(c.createdAt)}</time>
            </td>
          </tr>
        )}
      />
    </ListPage>
  );
}
