import type pg from 'pg';

/** The sealed form carried in an event: version, recipient hash, period, iv, ciphertext, GCM tag (base64url). */
export interface Sealed {
  v: 1;
  rh: string;
  p: string;
  iv: string;
  ct: string;
  tag: string;
}

/** The fields a sealed value holds (personal data of `email.queued`). */
export type SealedFields = Record<string, string | null>;

export interface KeyringOptions {
  pool: pg.Pool;
  /** `ENCRYPTION_KEY`: ≥ 32 bytes; HKDF derives the wrapping key and the recipient-hash key. */
  encryptionKey: string;
  /** How long an unwrapped data key is reused without asking Postgres (default 30 s, the erasure budget is 60 s). */
  cacheTtlMs?: number;
  /** Most data keys kept unwrapped in memory (default 10 000). */
  cacheMax?: number;
}

/** One value to seal: the fields of one email, under its (tenant, recipient, month of `at`) key. */
export interface SealItem {
  tenantId: string;
  emailId: string;
  /** The recipient: names the key (keyed hash), never stored. */
  email: string;
  at: Date;
  fields: SealedFields;
}

/** Fields of one email to seal under its recipient's existing key. */
export interface EmailSealItem {
  tenantId: string;
  emailId: string;
  fields: SealedFields;
}

/**
 * Bytes sealed under an email's key (an attachment, SPEC §22): the key's recipient hash and
 * period, the IV, the GCM tag and the ciphertext, kept as columns of their own.
 */
export interface SealedBytes {
  rh: string;
  p: string;
  iv: Buffer;
  tag: Buffer;
  ct: Buffer;
}

/** One sealed value to open, of one email. */
export interface OpenItem {
  tenantId: string;
  emailId: string;
  sealed: Sealed;
}

export interface Keyring {
  /** HMAC-SHA256(hmac key, tenant + "\n" + lowercased address), base64url: the recipient's key id and erased-address hash. */
  recipientHash(tenantId: string, email: string): string;
  /** Seals `fields` for one email; creates the (tenant, recipient, month of `at`) key when missing. */
  seal(tenantId: string, emailId: string, email: string, at: Date, fields: SealedFields): Promise<Sealed>;
  /**
   * Seals many values (an appended batch): the missing keys are created or read in two statements
   * whatever their number, then every value is sealed without further I/O.
   */
  sealMany(items: readonly SealItem[]): Promise<Sealed[]>;
  /**
   * Seals an outcome about one of an email's several recipients (SPEC §22) under THAT recipient's
   * (tenant, recipient, month) key, created when missing, without making it the email's key
   * (`email_keys` keeps the first `to`'s): erasing the recipient makes it unreadable, erasing
   * another recipient of the email does not.
   */
  sealForRecipients(items: readonly SealItem[]): Promise<Sealed[]>;
  /**
   * Seals fields of events that follow an email's `email.queued` (a bounce's diagnostic, a clicked
   * URL): under the key that email.queued was sealed under (found by the email, `email_keys`).
   * Never creates a key: null when the email is unknown or its key is gone (erased, past
   * retention) — the caller then keeps no copy of the fields.
   */
  sealForEmails(items: readonly EmailSealItem[]): Promise<(Sealed | null)[]>;
  /** The fields, or null when the key is gone (erased, past retention) or the value is not genuine. */
  open(tenantId: string, emailId: string, sealed: Sealed): Promise<SealedFields | null>;
  /** Opens many values (a consumed batch): the keys not cached are read in one query. */
  openMany(items: readonly OpenItem[]): Promise<(SealedFields | null)[]>;
  /**
   * Seals bytes of one email (an attachment) under the (tenant, recipient, month of `at`) key its
   * email.queued is sealed under, created when missing and recorded as the email's key. `label`
   * names the value within the email (its position), so sealed values cannot be swapped.
   */
  sealBytes(
    tenantId: string,
    emailId: string,
    email: string,
    at: Date,
    label: string,
    data: Buffer,
  ): Promise<SealedBytes>;
  /**
   * Seals bytes of one message under the (tenant, address, month of `at`) key, created when missing,
   * without recording it as the message's key (`email_keys`, as `sealForRecipients` does for
   * fields): for a message no later event is sealed by id, received mail (SPEC §24, sealed under
   * its sender's key). The sealed value names its key; erasing the address makes it unreadable.
   * Several parts of the message at once: one key lookup and one draw of randomness for all.
   */
  sealBytesForAddress(
    tenantId: string,
    emailId: string,
    email: string,
    at: Date,
    parts: readonly { label: string; data: Buffer }[],
  ): Promise<SealedBytes[]>;
  /** The bytes, or null when the key is gone (erased, past retention) or the value is not genuine. */
  openBytes(tenantId: string, emailId: string, label: string, sealed: SealedBytes): Promise<Buffer | null>;
  /** Deletes every key of the recipient (all months); returns how many were deleted. */
  eraseKeys(tenantId: string, email: string, client?: pg.ClientBase): Promise<number>;
  /** Deletes the keys of months that ended before `cutoff` (whole months only); per tenant when given. */
  dropPeriodsBefore(cutoff: Date, tenantId?: string, exceptTenants?: readonly string[]): Promise<number>;
  /** Forgets cached keys (all, or one tenant's recipient). */
  invalidate(tenantId?: string, recipientHash?: string): void;
  /**
   * Rewrites `data_keys` into a new file, so erased wrapped keys stay in no data file of the
   * table; a failure goes to `log` (the rescrub redoes it).
   */
  rewriteKeys(log?: (error: unknown) => void): Promise<void>;
}
