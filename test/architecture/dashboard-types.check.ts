// The dashboard's own answer types (services/dashboard/web/types.ts: the answers with no wire type
// in `@tern/contracts/wire`, each naming only the fields the pages use) pinned to the schemas the
// routes answer with (issue 41 item 5): each answer must be assignable to what the pages read, so
// a route that drops, renames or retypes a field the dashboard reads fails `tsc`. (The wire types
// the dashboard re-exports are pinned exactly in contracts' and the api's wire-checks.ts.) Nothing
// imports this file; the root typecheck reads it.

import type { Assert } from '@tern/contracts';
import type { z } from 'zod';
import type { emailContentSchema } from '../../packages/contracts/src/email-responses.js';
import type { logsPageMetaSchema } from '../../packages/contracts/src/http.js';
import type { projectSchema } from '../../packages/contracts/src/projects.js';
import type { suppressionSchema } from '../../packages/contracts/src/suppressions.js';
import type { renderedTemplateSchema, templateSchema } from '../../packages/contracts/src/templates.js';
import type {
  dailyResponseSchema,
  summaryResponseSchema,
  topTemplatesResponseSchema,
} from '../../services/api/src/analytics/schemas.js';
import type { apiKeyListSchema, createdApiKeySchema } from '../../services/api/src/api-keys/schemas.js';
import type { routeSchema } from '../../services/api/src/inbound/route-routes.js';
import type { tenantSettingsResponseSchema } from '../../services/api/src/settings/schemas.js';
import type * as D from '../../services/dashboard/web/types.js';

/** The route's answer carries at least what the page reads, with the same types. */
type Serves<Schema extends z.ZodType, Page> = z.output<Schema> extends Page ? true : false;

type _DashboardChecks = [
  Assert<Serves<typeof summaryResponseSchema, D.Summary>>,
  Assert<Serves<typeof dailyResponseSchema, { daily: D.DailyBucket[] }>>,
  Assert<Serves<typeof topTemplatesResponseSchema, { top: D.TopTemplate[] }>>,
  Assert<Serves<typeof emailContentSchema, D.EmailContent>>,
  Assert<Serves<typeof routeSchema, D.InboundRoute>>,
  Assert<Serves<typeof apiKeyListSchema, { data: D.ApiKey[] }>>,
  Assert<Serves<typeof createdApiKeySchema, D.CreatedApiKey>>,
  Assert<Serves<typeof templateSchema, D.Template>>,
  Assert<Serves<typeof renderedTemplateSchema, D.Rendered>>,
  Assert<Serves<typeof suppressionSchema, D.Suppression>>,
  Assert<Serves<typeof logsPageMetaSchema, D.LogsMeta>>,
  Assert<Serves<typeof projectSchema, D.Project>>,
  Assert<Serves<typeof tenantSettingsResponseSchema, D.TenantSettings>>,
];
