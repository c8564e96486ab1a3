import { z } from 'zod';
import { fromAddressSchema } from './campaigns.js';
import { CUSTOM_EVENT_NAME, RESERVED_EVENT_PREFIX } from './custom-events.js';
import { EVENT_TYPES, INBOUND_EVENT_TYPE } from './event-types.js';
import { nullableString } from './resources.js';
import type { AutomationFilter, AutomationStep } from './wire-audience.js';

// The step and filter types are the wire's (wire-audience.ts): one spelling for the schema, the SDK and the dashboard.
export type { AutomationFilter, AutomationStep };

/**
 * Automations (SPEC §27): `POST /automations { name, from?, trigger: { event }, steps }`, the
 * runs listed by `GET /automations/:id/runs`, and `POST /events/track` (a custom event). The
 * bodies and answers of those routes; the runner is services/worker, the tables packages/bulk.
 */

/** The contact events Tern emits itself (a write of `POST`/`PATCH /contacts`). */
export const CONTACT_EVENT_TYPES = ['contact.created', 'contact.updated'] as const;

/**
 * Built-in triggers: contact changes, the delivery events of the event stream (SPEC §25) and an
 * inbound message from the contact (`email.received`, SPEC §24).
 */
export const AUTOMATION_BUILTIN_EVENTS = [
  ...CONTACT_EVENT_TYPES,
  ...EVENT_TYPES,
  INBOUND_EVENT_TYPE,
] as const;

const eventName = z
  .string({ error: 'event must be a string' })
  .refine(
    (e) =>
      (AUTOMATION_BUILTIN_EVENTS as readonly string[]).includes(e) ||
      (CUSTOM_EVENT_NAME.test(e) && !RESERVED_EVENT_PREFIX.test(e)),
    {
      error: `event must be one of ${AUTOMATION_BUILTIN_EVENTS.join(', ')} or a custom event name (not starting with email., contact. or domain.)`,
    },
  )
  .meta({
    description: `\`contact.created\`, \`contact.updated\`, a delivery event type (${EVENT_TYPES.join(', ')}), \`email.received\` (mail from the contact) or a custom event name.`,
    example: 'contact.created',
  });

/** The most days a delay or a wait may last. */
export const MAX_AUTOMATION_WAIT_DAYS = 366;
const DURATION = /^P(?:(\d{1,4})W)?(?:(\d{1,4})D)?(?:T(?:(\d{1,5})H)?(?:(\d{1,6})M)?(?:(\d{1,8})S)?)?$/;

/**
 * Milliseconds of an ISO 8601 duration of weeks, days, hours, minutes and whole seconds
 * (`P1D`, `PT30M`, `P1DT12H`); null when it is not one. Years and months are refused: their
 * length depends on the calendar.
 */
export function durationMs(iso: string): number | null {
  const m = DURATION.exec(iso);
  if (m === null || iso === 'P' || iso.endsWith('T')) return null;
  const [, w, d, h, min, s] = m.map((x) => Number(x ?? 0));
  return ((((w ?? 0) * 7 + (d ?? 0)) * 24 + (h ?? 0)) * 60 + (min ?? 0)) * 60_000 + (s ?? 0) * 1000;
}

const DURATION_ERROR = `must be an ISO 8601 duration of weeks, days, hours, minutes or seconds (e.g. P1D, PT30M), at most ${MAX_AUTOMATION_WAIT_DAYS} days`;
const duration = (what: string) =>
  z.string({ error: `${what} ${DURATION_ERROR}` }).refine(
    (v) => {
      const ms = durationMs(v);
      return ms !== null && ms <= MAX_AUTOMATION_WAIT_DAYS * 86_400_000;
    },
    { error: `${what} ${DURATION_ERROR}` },
  );

const idLike = z.string().min(1).max(200);

/** A property value an `update` step sets (null removes it). */
const propertyValue = z.union([z.string().max(2000), z.number(), z.boolean(), z.null()]);

export const FILTER_OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'contains', 'exists'] as const;
export type FilterOp = (typeof FILTER_OPS)[number];

/**
 * The condition of an `if` step: a segment filter (SPEC §27) evaluated on the run's contact when
 * the step is reached. Its full check is packages/bulk's `segmentFilterSchema` (the api runs it on
 * every `if`); here it is any object, so the contracts do not hold a second copy.
 */
export const automationFilterSchema = z.record(z.string(), z.unknown()).meta({
  description:
    'A segment filter (SPEC §27): `{ and }`, `{ or }`, `{ not }`, `{ property, op, value? }`, `{ audience }`, `{ topic }`, `{ engagement, days }`, `{ tag }`, `{ campaign }`.',
  example: { property: 'plan', op: 'eq', value: 'pro' },
}) as unknown as z.ZodType<AutomationFilter>;

/** The most steps of an automation, branches included, and the deepest nesting of branches. */
export const MAX_AUTOMATION_STEPS = 100;
export const MAX_AUTOMATION_DEPTH = 5;

const branch = () => z.array(automationStepSchema).max(MAX_AUTOMATION_STEPS).optional();

const STEP_KINDS = ['delay', 'send', 'waitFor', 'if', 'update'] as const;

/**
 * One step: exactly one of `delay`, `send`, `waitFor`, `if`, `update` (`then`/`else` only with
 * `waitFor` and `if`). One object with every key optional, checked after, so an error names the
 * field (`steps.1.waitFor.timeout`) rather than "no member of the union matched".
 */
export const automationStepSchema: z.ZodType<AutomationStep, unknown> = z
  .lazy(
    () =>
      z
        .strictObject({
          delay: duration('delay').optional(),
          send: idLike.meta({ description: 'A template of the tenant.' }).optional(),
          waitFor: z.strictObject({ event: eventName, timeout: duration('timeout') }).optional(),
          if: automationFilterSchema.optional(),
          update: z
            .record(z.string().min(1).max(100), propertyValue)
            .refine((r) => Object.keys(r).length >= 1 && Object.keys(r).length <= 50, {
              error: 'update must set 1 to 50 properties',
            })
            .optional(),
          then: branch(),
          else: branch(),
        })
        .superRefine((step, ctx) => {
          const kinds = STEP_KINDS.filter((k) => step[k] !== undefined);
          if (kinds.length !== 1)
            ctx.addIssue({
              code: 'custom',
              message: `a step must have exactly one of ${STEP_KINDS.join(', ')}`,
            });
          else if (
            (step.then !== undefined || step.else !== undefined) &&
            kinds[0] !== 'waitFor' &&
            kinds[0] !== 'if'
          )
            ctx.addIssue({ code: 'custom', message: 'then and else belong to a waitFor or an if step' });
          // A cast, not a transform: a transform has no JSON Schema for the document's components.
        }) as unknown as z.ZodType<AutomationStep, unknown>,
    // An id: the schema is recursive (`then`/`else`), so the OpenAPI document needs it as a component.
  )
  .meta({ id: 'NewAutomationStep' });

/** Every step of a list, branches included, with its depth (1 = top level). */
export function* walkSteps(steps: readonly AutomationStep[], depth = 1): Generator<[AutomationStep, number]> {
  for (const s of steps) {
    yield [s, depth];
    if ('then' in s && s.then) yield* walkSteps(s.then, depth + 1);
    if ('else' in s && s.else) yield* walkSteps(s.else, depth + 1);
  }
}

const stepsSchema = z
  .array(automationStepSchema, { error: 'steps must be an array of 1 to 100 steps' })
  .min(1, { error: 'steps must be an array of 1 to 100 steps' })
  .superRefine((steps, ctx) => {
    let n = 0;
    let deepest = 0;
    for (const [, depth] of walkSteps(steps)) {
      n += 1;
      deepest = Math.max(deepest, depth);
    }
    if (n > MAX_AUTOMATION_STEPS)
      ctx.addIssue({
        code: 'custom',
        message: `steps must hold at most ${MAX_AUTOMATION_STEPS} steps, branches included`,
      });
    if (deepest > MAX_AUTOMATION_DEPTH)
      ctx.addIssue({
        code: 'custom',
        message: `steps must nest branches at most ${MAX_AUTOMATION_DEPTH} deep`,
      });
  })
  .meta({
    description:
      'Run in order per contact: `{ delay }`, `{ send: templateId }`, `{ waitFor: { event, timeout }, then?, else? }` (then: the event came; else: the timeout), `{ if: filter, then?, else? }`, `{ update: { property: value } }`. At most 100 steps, 5 levels of branches.',
  });

const triggerSchema = z.strictObject({ event: eventName });

const name = z
  .string({ error: 'name must be a string of 1 to 100 characters' })
  .min(1, { error: 'name must be a string of 1 to 100 characters' })
  .max(100, { error: 'name must be a string of 1 to 100 characters' })
  .meta({ description: 'Display name.', example: 'Welcome' });

const EXAMPLE_STEPS: AutomationStep[] = [
  { send: 'tpl_4Hs9dK2mQ7wE1rT6yU3iO8pA' },
  {
    waitFor: { event: 'email.opened', timeout: 'P2D' },
    then: [{ update: { engaged: true } }],
    else: [{ delay: 'PT1H' }, { send: 'tpl_7Hs9dK2mQ7wE1rT6yU3iO8pB' }],
  },
];

const enabled = z.boolean({ error: 'enabled must be a boolean' }).meta({
  description: 'false: starts no run (runs already going on finish). Default true.',
  example: true,
});

export const createAutomationBodySchema = z
  .strictObject({
    name,
    from: fromAddressSchema.optional(),
    trigger: triggerSchema,
    steps: stepsSchema,
    enabled: enabled.optional(),
  })
  .superRefine((b, ctx) => {
    if (b.from === undefined && [...walkSteps(b.steps)].some(([s]) => 'send' in s))
      ctx.addIssue({ code: 'custom', path: ['from'], message: 'from is required when a step sends' });
  })
  .meta({
    examples: [
      {
        name: 'Welcome',
        from: 'Acme <hello@acme.test>',
        trigger: { event: 'contact.created' },
        steps: EXAMPLE_STEPS,
      },
    ],
  });
export type CreateAutomationBody = z.infer<typeof createAutomationBodySchema>;

export const updateAutomationBodySchema = z
  .strictObject({
    name: name.optional(),
    from: fromAddressSchema.optional(),
    trigger: triggerSchema.optional(),
    steps: stepsSchema.optional(),
    enabled: enabled.optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    error: 'name, from, trigger, steps or enabled is required',
  })
  .meta({ examples: [{ name: 'Welcome (v2)' }, { enabled: false }] });
export type UpdateAutomationBody = z.infer<typeof updateAutomationBodySchema>;

/**
 * A stored step as answered (validated on the way in): the same keys, no check and no transform,
 * so the response serializer and the OpenAPI document take it as is.
 */
const storedStepSchema: z.ZodType<AutomationStep> = z
  .lazy(() =>
    z.object({
      delay: z.string().optional(),
      send: z.string().optional(),
      waitFor: z.object({ event: z.string(), timeout: z.string() }).optional(),
      if: z.record(z.string(), z.unknown()).optional(),
      update: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).optional(),
      then: z.array(storedStepSchema).optional(),
      else: z.array(storedStepSchema).optional(),
    }),
  )
  .meta({ id: 'AutomationStep' }) as unknown as z.ZodType<AutomationStep>;

export const AUTOMATION_RUN_STATES = ['active', 'completed', 'stopped'] as const;
export type AutomationRunState = (typeof AUTOMATION_RUN_STATES)[number];

export const automationSchema = z
  .object({
    id: z.string().meta({ description: 'Automation id, `aut_…`.' }),
    name: z.string(),
    from: z.string().nullable(),
    trigger: z.object({ event: z.string() }),
    steps: z.array(storedStepSchema),
    enabled: z.boolean().meta({ description: 'false: no new run starts.' }),
    runs: z
      .object({ active: z.number().int(), completed: z.number().int(), stopped: z.number().int() })
      .meta({ description: 'Runs by state.' }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({
    examples: [
      {
        id: 'aut_4Hs9dK2mQ7wE1rT6yU3iO8pA',
        name: 'Welcome',
        from: 'Acme <hello@acme.test>',
        trigger: { event: 'contact.created' },
        steps: EXAMPLE_STEPS,
        enabled: true,
        runs: { active: 3, completed: 10, stopped: 1 },
        createdAt: '2026-06-15T12:00:00.000Z',
        updatedAt: '2026-06-15T12:00:00.000Z',
      },
    ],
  });
export type Automation = z.infer<typeof automationSchema>;

export const automationRunSchema = z
  .object({
    id: z.string().meta({ description: 'Run id, `run_…`.' }),
    automationId: z.string(),
    contactId: z.string(),
    email: nullableString('The contact’s address; null once deleted or erased.'),
    state: z.enum(AUTOMATION_RUN_STATES),
    stopReason: nullableString('unsubscribed | suppressed | erased, when stopped.'),
    position: z.string().nullable().meta({
      description:
        'Path of the current step while active: indexes and branches, e.g. `1` or `1.else.0`; null once over.',
    }),
    waiting: z
      .enum(['delay', 'event'])
      .nullable()
      .meta({ description: 'What the run waits for at `position` (null: due now or over).' }),
    dueAt: nullableString('When it next moves (end of a delay, a wait’s timeout).'),
    stepsDone: z.number().int(),
    startedAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({
    examples: [
      {
        id: 'run_4Hs9dK2mQ7wE1rT6yU3iO8pA',
        automationId: 'aut_4Hs9dK2mQ7wE1rT6yU3iO8pA',
        contactId: 'ct_4Hs9dK2mQ7wE1rT6yU3iO8pA',
        email: 'ada@example.com',
        state: 'active',
        stopReason: null,
        position: '1',
        waiting: 'event',
        dueAt: '2026-06-17T12:00:00.000Z',
        stepsDone: 1,
        startedAt: '2026-06-15T12:00:00.000Z',
        updatedAt: '2026-06-15T12:00:00.000Z',
      },
    ],
  });
export type AutomationRun = z.infer<typeof automationRunSchema>;
