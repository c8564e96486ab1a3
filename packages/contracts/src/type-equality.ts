import type { z } from 'zod';

// Type-level pins (issue 41 item 5): `type _Checks = [Assert<Equals<A, B>>, …]` fails `tsc` as soon
// as A and B differ, in either direction. Used by the files that pin hand-written types to the
// schemas they describe (contracts' and the api's wire-checks.ts, the SDK's contract-checks.ts).

/** true when A and B are the same type (not merely assignable one way). */
export type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** A wire type against the output of the zod schema a route answers with. */
export type Same<Wire, Schema extends z.ZodType> = Equals<Wire, z.output<Schema>>;
/** Compiles only for `true`. */
export type Assert<T extends true> = T;
