import { createRequire } from 'node:module';
import { onFirstUse } from '@tern/kernel';

const requireHere = createRequire(import.meta.url);

/** nodemailer, loaded when an SMTP relay is first configured: the sandbox and HTTP providers never load it. */
export const nodemailer = onFirstUse(() => requireHere('nodemailer') as typeof import('nodemailer'));

/** nodemailer's MIME composer, loaded with the first message relayed one transaction per recipient. */
export const mailComposer = onFirstUse(
  () =>
    requireHere('nodemailer/lib/mail-composer') as typeof import('nodemailer/lib/mail-composer')['default'],
);
