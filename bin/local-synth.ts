/**
 * `npm run start:synth`: pipegate served from the synthesized cloud assembly, the code and
 * templates `cdk deploy` would upload, with IAM enforced on every AWS call a function makes.
 * Same conventions as `npm start`: PORT, HOST, PIPEGATE_DATA_DIR (default ./.pipegate-synth),
 * PIPEGATE_OWNER_TOKEN; Ctrl-C stops it cleanly.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import { DataDirInUseError } from '../lib/local/data-dir-lock';
import { startSynthRuntime } from '../lib/synth/runtime';

async function main(): Promise<void> {
  const started = Date.now();
  const runtime = await startSynthRuntime();
  const { resumed, interrupted, callbacks } = runtime.recovered;
  const lines = [
    '',
    `  pipegate (synthesized assembly) is running at ${runtime.url}`,
    '',
    `  owner token   ${runtime.ownerToken}`,
    `  data dir      ${runtime.dataDir}`,
    `  assembly      ${runtime.assembly.dir}`,
    `  functions     ${runtime.functions.size} bundles, IAM enforced by the local AWS endpoint ${runtime.endpoint.url}`,
    `  started in    ${((Date.now() - started) / 1000).toFixed(1)} s`,
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
    process.stderr.write(`\n  ${signal}: stopping…\n`);
    runtime.stop().then(
      () => process.exit(0),
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
  if (e instanceof DataDirInUseError) process.stderr.write(`${e.message}\n`);
  else if ((e as { code?: string }).code === 'EADDRINUSE') {
    process.stderr.write(`Port ${process.env.PORT ?? 3000} is already in use. Set PORT to another port, e.g. PORT=3001 npm run start:synth\n`);
  } else process.stderr.write(`pipegate could not start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
