// Written by `npm run gen:resources` from the `defineResource` exports of src/*/routes.ts: do not
// edit. services/api/test/contract/app.unit.test.ts fails when it is not current.
import { automationsResource } from './automations/routes.js';
import { campaignsResource } from './campaigns/routes.js';
import { projectsResource } from './projects/routes.js';
import { segmentsResource } from './segments/routes.js';
import { sequencesResource } from './sequences/routes.js';
import { suppressionsResource } from './suppressions/routes.js';
import { templatesResource } from './templates/routes.js';
import { topicsResource } from './topics/routes.js';

/** Every tenant resource `apiRoutes` mounts, with the repository its routes take (`resource-kit.ts`). */
export const RESOURCES: readonly [
  typeof automationsResource,
  typeof campaignsResource,
  typeof projectsResource,
  typeof segmentsResource,
  typeof sequencesResource,
  typeof suppressionsResource,
  typeof templatesResource,
  typeof topicsResource,
] = [
  automationsResource,
  campaignsResource,
  projectsResource,
  segmentsResource,
  sequencesResource,
  suppressionsResource,
  templatesResource,
  topicsResource,
];
