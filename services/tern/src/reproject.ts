import { reprojectAnalytics } from '@tern/projector';
import { runReplayCommand } from './replay-command.js';
import { PROJECTOR_GROUP } from './roles/projector.js';

const USAGE = 'usage: npm run reproject -- analytics\n';

/**
 * `npm run reproject -- analytics` (SPEC §26, docs/analytics.md "Reprojection"): fills the next
 * version of the sliceable rollup from the whole log while the serving one keeps serving and the
 * projectors keep running, then swaps. Progress on stderr; the result on stdout.
 */
if (process.argv[2] !== 'analytics') {
  process.stderr.write(USAGE);
  process.exit(2);
}
runReplayCommand('reproject', async ({ pool, ch, stream, mailboxes }) => {
  const tty = process.stderr.isTTY;
  let lastLine = 0;
  const result = await reprojectAnalytics({
    pool,
    ch,
    log: stream,
    group: `${PROJECTOR_GROUP}.reproject.${Date.now()}`,
    mailboxes,
    onProgress({ done, total, perSecond, etaMs }) {
      if (Date.now() - lastLine < 500 && done < total) return;
      lastLine = Date.now();
      const pct = total > 0 ? Math.min(100, Math.floor((done / total) * 100)) : 100;
      const bar = '#'.repeat(Math.floor(pct / 5)).padEnd(20, '.');
      const eta = etaMs === null ? '?' : `${Math.ceil(etaMs / 1000)} s`;
      const line = `[${bar}] ${pct}% ${done}/${total} events, ${Math.round(perSecond)}/s, ETA ${eta}`;
      process.stderr.write(tty ? `\r${line}` : `${line}\n`);
    },
  });
  if (tty) process.stderr.write('\n');
  const perSecond = Math.round(result.events / (result.durationMs / 1000));
  process.stdout.write(
    `reprojected ${result.from} → ${result.to}: ${result.events} records (${result.counted} counted up to claim ${result.cut}, ${result.rewritten} email states reclassified) in ${Math.round(result.durationMs)} ms (${perSecond} records/s); email_dims now reads ${result.to}\n`,
  );
});
