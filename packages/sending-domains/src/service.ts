import {
  type Domain,
  type DomainEvent,
  type DomainEventType,
  type DomainRecord,
  domainEventSchema,
  normalizeDomainName,
} from '@tern/contracts';
import type { EventStream } from '@tern/event-log';
import { createPoller } from '@tern/jobs';
import { type Logger, type Page, type PageWindow, silentLogger } from '@tern/kernel';
import type pg from 'pg';
import type { DnsChecker } from './dns-check.js';
import { dkimSelector, generateDkimKey } from './keys.js';
import { expectedRecords, inboundMxRecord, type RecordSettings } from './records.js';
import { applyCheck, type CheckOutcome, type CheckSchedule, DEFAULT_CHECK_SCHEDULE } from './status.js';
import {
  claimDueDomains,
  clearEvents,
  type DomainRow,
  deleteDomain,
  domainCount,
  eventsToAppend,
  getDomain,
  insertDomain,
  listDomains,
  saveCheck,
  setDomainRecords,
  toDomain,
} from './store.js';

/** Seals the private keys at rest (`createSecretBox` of `@tern/webhooks`, under its own HKDF label). */
export interface KeySealer {
  encrypt(clear: string): string;
  decrypt(sealed: string): string;
}

export interface SendingDomainsOptions {
  pool: pg.Pool;
  /** Where `domain.verified` / `domain.failed` go (the dispatcher reads them from there). */
  log: EventStream;
  dns: DnsChecker;
  sealer: KeySealer;
  /** The return path of new domains (BOUNCE_SUBDOMAIN, BOUNCE_MX_HOST, the SPF value). */
  records: RecordSettings;
  /** INBOUND_MX_HOST: the MX of receiving domains (SPEC §24); absent → BOUNCE_MX_HOST's value. */
  inboundMxHost?: string | undefined;
  now: () => Date;
  schedule?: CheckSchedule;
  logger?: Logger;
  /** How often the poller looks for due checks and unsent events. Default 30 s. */
  pollIntervalMs?: number;
  /** The most domains a tenant may have (DOMAINS_MAX_PER_TENANT, issue 40 item 11). Default 50. */
  maxPerTenant?: number;
}

/** Default of `maxPerTenant`: each add costs an RSA-2048 key generation (~0.2 s of CPU). */
export const DEFAULT_DOMAINS_PER_TENANT = 50;

export interface SendingDomains {
  /**
   * A new pending domain with a fresh key; `exists` when the tenant already has that name, `limit`
   * when it has `maxPerTenant` domains (checked before the key is generated, and again at the insert).
   */
  add(tenantId: string, id: string, name: string): Promise<Domain | 'exists' | 'limit'>;
  get(tenantId: string, id: string): Promise<Domain | null>;
  list(tenantId: string, window: PageWindow): Promise<Page<Domain>>;
  remove(tenantId: string, id: string): Promise<boolean>;
  /**
   * Receiving on or off (SPEC §24): adds (or removes) the `inbound_mx` record `10 <mxHost>` and
   * checks the DNS now; null when unknown. Without `mxHost` (no INBOUND_MX_HOST) it cannot be on.
   */
  setReceiving(tenantId: string, id: string, receiving: boolean): Promise<Domain | null>;
  /** Checks the DNS now and answers the new state (SPEC §20 `POST /domains/:id/verify`); null when unknown. */
  verify(tenantId: string, id: string): Promise<Domain | null>;
  /** One poller pass: appends saved events, then checks every due domain. Resolves with the domains checked. */
  runDue(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

/** Domains checked at once by one pass (each check is four small DNS queries). */
const CHECKS_PER_CLAIM = 8;
/** A claimed check belongs to its checker this long (DNS timeouts are a few seconds). */
const CHECK_LEASE_MS = 2 * 60_000;

/**
 * Sending domains (SPEC §20): adding one (key pair, records), checking its DNS now or on schedule,
 * and the events of its changes. One poller re-checks pending domains with backoff and verified
 * ones daily, in any number of processes (claims with SKIP LOCKED); a check that raced another is
 * dropped (version), and an event is saved with its change and appended after (outbox), so a
 * crash between the two appends it later — once per change, by its derived id.
 */
export function createSendingDomains(opts: SendingDomainsOptions): SendingDomains {
  const { pool, now } = opts;
  const schedule = opts.schedule ?? DEFAULT_CHECK_SCHEDULE;
  const maxPerTenant = opts.maxPerTenant ?? DEFAULT_DOMAINS_PER_TENANT;
  const logger = opts.logger ?? silentLogger;

  /** The event of a change, named after the domain as the check found it. */
  function eventOf(row: DomainRow, outcome: CheckOutcome, type: DomainEventType, at: Date): DomainEvent {
    return domainEventSchema.parse({
      // One id per change: a repeated append (crash, retry) is the same event downstream.
      id: `${row.id}:${type.slice('domain.'.length)}:${row.transitions + 1}`,
      type,
      tenantId: row.tenantId,
      domainId: row.id,
      occurredAt: at.toISOString(),
      data: {
        name: row.name,
        status: outcome.status,
        records: outcome.records,
        reason: outcome.reason,
        verifiedAt: outcome.verifiedAt?.toISOString() ?? null,
      },
    });
  }

  async function append(events: DomainEvent[]): Promise<void> {
    if (events.length === 0) return;
    await opts.log.append(events);
    await clearEvents(pool, events);
    for (const e of events)
      logger.info({ domainId: e.domainId, tenantId: e.tenantId, type: e.type }, 'sending domain changed');
  }

  /** Appends what a crash or an unavailable log left in the outbox. */
  async function flushEvents(): Promise<void> {
    for (;;) {
      const pending = await eventsToAppend(pool, 100);
      if (pending.length === 0) return;
      await append(pending);
      if (pending.length < 100) return;
    }
  }

  /** Checks one domain and saves the outcome (and its event, in the same statement); null when another check saved first. */
  async function check(row: DomainRow, manual: boolean): Promise<DomainRow | null> {
    const results = await opts.dns.check(row.records);
    const at = now();
    const outcome = applyCheck(row, results, at, { manual, schedule });
    const event = outcome.event === null ? null : eventOf(row, outcome, outcome.event, at);
    const saved = await saveCheck(pool, row, outcome, event, at);
    if (saved !== null && event !== null) {
      await append([event]).catch((error: unknown) =>
        logger.warn(
          { err: String(error), domainId: row.id },
          'domain event not appended yet; the poller retries',
        ),
      );
    }
    return saved;
  }

  async function runDue(): Promise<number> {
    await flushEvents();
    let checked = 0;
    for (;;) {
      const at = now();
      const due = await claimDueDomains(pool, at, new Date(at.getTime() + CHECK_LEASE_MS), CHECKS_PER_CLAIM);
      if (due.length === 0) return checked;
      await Promise.all(due.map((row) => check(row, false)));
      checked += due.length;
    }
  }

  const poller = createPoller({
    name: 'domain-checks',
    intervalMs: opts.pollIntervalMs ?? 30_000,
    run: runDue,
    onError: (error) => logger.warn({ err: String(error) }, 'domain checks failed; retrying'),
  });

  return {
    async add(tenantId, id, rawName) {
      const name = normalizeDomainName(rawName);
      if (name === null) throw new Error('add: invalid domain name (the body schema checks it first)');
      const at = now();
      // Refused before the key generation, the costly part.
      const before = await domainCount(pool, tenantId, name);
      if (before.taken) return 'exists';
      if (before.count >= maxPerTenant) return 'limit';
      const key = await generateDkimKey();
      const selector = dkimSelector(at, id);
      const records: DomainRecord[] = expectedRecords(
        name,
        { selector, publicKeyBase64: key.publicKeyBase64 },
        opts.records,
      ).map((r) => ({ ...r, status: 'pending' }));
      const row = await insertDomain(
        pool,
        {
          tenantId,
          id,
          name,
          selector,
          privateKeyEnc: opts.sealer.encrypt(key.privateKeyPem),
          records,
          nextCheckAt: new Date(at.getTime() + schedule.minPendingDelayMs),
        },
        at,
        maxPerTenant,
      );
      return typeof row === 'string' ? row : toDomain(row);
    },
    async get(tenantId, id) {
      const row = await getDomain(pool, tenantId, id);
      return row && toDomain(row);
    },
    async list(tenantId, window) {
      const { items, total } = await listDomains(pool, tenantId, window);
      return { items: items.map(toDomain), total };
    },
    remove: (tenantId, id) => deleteDomain(pool, tenantId, id),
    async setReceiving(tenantId, id, receiving) {
      const row = await getDomain(pool, tenantId, id);
      if (row === null) return null;
      const others = row.records.filter((r) => r.purpose !== 'inbound_mx');
      const mxHost = opts.inboundMxHost ?? opts.records.bounceMxHost;
      const records = receiving
        ? [...others, { ...inboundMxRecord(row.name, mxHost), status: 'pending' as const }]
        : others;
      await setDomainRecords(pool, tenantId, id, records, now());
      const fresh = await getDomain(pool, tenantId, id);
      if (fresh === null) return null;
      const saved = await check(fresh, true);
      const current = saved ?? (await getDomain(pool, tenantId, id));
      return current && toDomain(current);
    },
    async verify(tenantId, id) {
      const row = await getDomain(pool, tenantId, id);
      if (row === null) return null;
      const saved = await check(row, true);
      // Another check saved first: answer what it found.
      const current = saved ?? (await getDomain(pool, tenantId, id));
      return current && toDomain(current);
    },
    runDue,
    start: () => poller.start(),
    stop: () => poller.stop(),
  };
}
