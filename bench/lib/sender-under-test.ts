import * as thisSender from '@tern/sender';

/**
 * The sender a bench measures: this checkout's, or with `BENCH_SMTP_OUT_SENDER` another sender's
 * `src/index.ts` (a copy of `main`'s `services/sender` inside this checkout, so its imports
 * resolve): the before of a change. smtp-out and `bench/experiments/several-recipients.ts` read it.
 */
export const senderUnderTest = (
  process.env.BENCH_SMTP_OUT_SENDER ? await import(process.env.BENCH_SMTP_OUT_SENDER) : thisSender
) as typeof thisSender;
