/** `pipegate`: the owner's and caller's command line (contract §10). */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import { runCli } from '../lib/cli/program';

runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
  stdin: process.stdin,
}).then(
  (code) => {
    process.exitCode = code;
    // Ctrl-C during a wait: the follow-up is printed; nothing is worth waiting for (a poll's timer).
    if (code === 130) process.exit(code);
  },
  (e: unknown) => {
    process.stderr.write(`pipegate: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 1;
  },
);
