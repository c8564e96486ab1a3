// The wire types whose schemas the api's routes declare (not `@tern/contracts`: topics, contact
// properties, segments, the event stream, the inbound list, the breakdown's dimensions) pinned to
// them: each `Same<…>` fails `tsc` when a route's answer and the type the SDK and the dashboard
// read drift apart (issue 41 item 5; the rest are pinned in packages/contracts/src/wire-checks.ts).
// Nothing imports this file; the typecheck reads it.

import type { Assert, Equals, Same } from '@tern/contracts';
import type * as W from '@tern/contracts/wire';
import type { Dimension } from '@tern/read-models';
import type { contactPropertySchema } from './contacts/property-routes.js';
import type { eventsResponseSchema, streamEventSchema } from './events/schemas.js';
import type { inboundListSchema } from './inbound/routes.js';
import type { segmentSchema } from './segments/routes.js';
import type { topicSchema } from './topics/routes.js';

type _ApiWireChecks = [
  Assert<Same<W.Topic, typeof topicSchema>>,
  Assert<Same<W.ContactProperty, typeof contactPropertySchema>>,
  Assert<Equals<W.ContactPropertyType, W.ContactProperty['type']>>,
  Assert<Same<W.Segment, typeof segmentSchema>>,
  Assert<Same<W.StreamEvent, typeof streamEventSchema>>,
  Assert<Same<W.StreamPage, typeof eventsResponseSchema>>,
  Assert<Same<W.InboundList, typeof inboundListSchema>>,
  // `by=` and the filters of GET /analytics/breakdown (the route's enum is read-models' DIMENSIONS).
  Assert<Equals<W.AnalyticsDimension, Dimension>>,
];
