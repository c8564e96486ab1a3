import { listRoutes } from '../kit/list-page.js';
import { routeHref } from '../router.js';
import { TimeCell } from '../table.js';
import type { Campaign } from '../types.js';
import { formatDate, formatNumber, StatusBadge } from '../ui.js';
import { CampaignDetail } from './campaign-detail.js';
import { CampaignEditor } from './campaign-editor.js';

/** SPEC §15 campaigns: `#/campaigns` (list), `#/campaigns/new`, `#/campaigns/<id>`. */
export const CampaignsPage = listRoutes<Campaign>(
  'campaign',
  {
    columns: ['Name', 'Status', 'Audience', 'Sent', 'When', 'Created'],
    help: (
      <>
        A campaign sends one email to every subscribed contact of an audience. First give contacts an audience
        on the <a href={routeHref('/contacts')}>Contacts</a> page (or import them), then{' '}
        <a href={routeHref('/campaigns/new')}>create a campaign</a>.
      </>
    ),
    cells: (c) => (
      <>
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
        <TimeCell at={c.createdAt} />
      </>
    ),
  },
  CampaignEditor,
  CampaignDetail,
);
