import { requireOnFirstUse } from '@tern/kernel';

/** nodemailer, loaded when an SMTP relay is first configured: the sandbox and HTTP providers never load it. */
export const nodemailer = requireOnFirstUse<typeof import('nodemailer')>(import.meta.url, 'nodemailer');

/** nodemailer's MIME composer, loaded with the first message relayed one transaction per recipient. */
export const mailComposer = requireOnFirstUse<typeof import('nodemailer/lib/mail-composer')['default']>(
  import.meta.url,
  'nodemailer/lib/mail-composer',
);

/**
 * The pieces of nodemailer's DKIM signer `signDkim` uses (its header parser, relaxed body hash, header
 * canonicalisation, domain and folding helpers), loaded with the first message signed.
 */
export const messageParser = requireOnFirstUse<
  typeof import('nodemailer/lib/dkim/message-parser')['default']
>(import.meta.url, 'nodemailer/lib/dkim/message-parser');
export const dkimRelaxedBody = requireOnFirstUse<
  typeof import('nodemailer/lib/dkim/relaxed-body')['default']
>(import.meta.url, 'nodemailer/lib/dkim/relaxed-body');
export const dkimSign = requireOnFirstUse<typeof import('nodemailer/lib/dkim/sign')['default']>(
  import.meta.url,
  'nodemailer/lib/dkim/sign',
);
export const nodemailerShared = requireOnFirstUse<typeof import('nodemailer/lib/shared')>(
  import.meta.url,
  'nodemailer/lib/shared',
);
export const mimeFuncs = requireOnFirstUse<typeof import('nodemailer/lib/mime-funcs')>(
  import.meta.url,
  'nodemailer/lib/mime-funcs',
);

/** nodemailer's MIME node, whose envelope parsing `sendRaw` uses: loaded with the first composed message sent. */
export const mimeNode = requireOnFirstUse<typeof import('nodemailer/lib/mime-node')['default']>(
  import.meta.url,
  'nodemailer/lib/mime-node',
);
