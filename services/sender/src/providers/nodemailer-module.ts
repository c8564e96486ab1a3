import { requireOnFirstUse } from '@tern/kernel';

/** nodemailer, loaded when an SMTP relay is first configured: the sandbox and HTTP providers never load it. */
export const nodemailer = requireOnFirstUse<typeof import('nodemailer')>(import.meta.url, 'nodemailer');

/** nodemailer's MIME composer, loaded with the first message relayed one transaction per recipient. */
export const mailComposer = requireOnFirstUse<typeof import('nodemailer/lib/mail-composer')['default']>(
  import.meta.url,
  'nodemailer/lib/mail-composer',
);

/** nodemailer's DKIM signer, loaded with the first several-recipient message signed once for all its copies. */
export const dkimSigner = requireOnFirstUse<typeof import('nodemailer/lib/dkim')['default']>(
  import.meta.url,
  'nodemailer/lib/dkim',
);
