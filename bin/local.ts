/**
 * `npm start`: the whole of pipegate on this machine. Data lives in ./.pipegate (or
 * PIPEGATE_DATA_DIR) and survives restarts; Ctrl-C stops it cleanly.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import { ConfigError } from '../lib/config';
import { DataDirInUseError, startRuntime } from '../lib/local/runtime';

async function main(): Promise<void> {
  const runtime = await startRuntime();
  const { resumed, interrupted, callbacks } = runtime.recovered;
  const lines = [
    '',
    `  pipegate is running at ${runtime.url}`,
    ...(runtime.deps.config.publicUrl ? [`  answers name  ${runtime.deps.config.publicUrl} (PIPEGATE_PUBLIC_URL)`] : []),
    '',
    `  owner token   ${runtime.ownerToken}`,
    `  data dir      ${runtime.dataDir}`,
    ...(resumed + interrupted + callbacks > 0
      ? [`  recovered     ${resumed} queued, ${interrupted} interrupted (marked failed), ${callbacks} callbacks resumed`]
      : []),
    '',
    '  Try it:',
    `    export PIPEGATE_URL=${runtime.url} PIPEGATE_OWNER_TOKEN=${runtime.ownerToken}`,
    '    npx pipegate push examples/greeting.json && npx pipegate run greeting && npx pipegate publish greeting',
    '',
    '  Press Ctrl-C to stop.',
    '',
  ];
  process.stderr.write(`${lines.join('\n')}\n`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    const running = runtime.workflow.running().length;
    const drain = runtime.drainSeconds;
    process.stderr.write(
      `\n  ${signal}: stopping. New requests are answered 503; ` +
        (running > 0 ? `waiting up to ${drain} s for ${running} running execution${running === 1 ? '' : 's'} to finish…\n` : 'nothing is running.\n'),
    );
    runtime.stop().then(
      (r) => {
        if (r.running > 0) {
          const took = (r.waitedMs / 1000).toFixed(1);
          process.stderr.write(
            `  ${r.finished} of ${r.running} finished in ${took} s` +
              (r.interrupted > 0 ? `; ${r.interrupted} still running after ${drain} s failed as interrupted (callbacks go out at the next start)` : '') +
              '.\n',
          );
        }
        process.stderr.write('  stopped.\n');
        process.exit(0);
      },
      (e: unknown) => {
        process.stderr.write(`  could not stop cleanly: ${String(e)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((e: unknown) => {
  if (e instanceof ConfigError || e instanceof DataDirInUseError) process.stderr.write(`${e.message}\n`);
  else if ((e as { code?: string }).code === 'EADDRINUSE') {
    process.stderr.write(`Port ${process.env.PORT ?? 3000} is already in use. Set PORT to another port, e.g. PORT=3001 npm start\n`);
  } else process.stderr.write(`pipegate could not start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
