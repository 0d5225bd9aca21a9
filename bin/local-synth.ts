/**
 * `npm run start:synth`: pipegate served from the synthesized cloud assembly, the code and
 * templates `cdk deploy` would upload, with IAM enforced on every AWS call a function makes.
 * Same conventions as `npm start`: PORT, HOST, PIPEGATE_DATA_DIR (default ./.pipegate-synth),
 * PIPEGATE_OWNER_TOKEN, PIPEGATE_DRAIN_SECONDS; Ctrl-C drains and stops it as `npm start` does.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import { serve } from '../lib/local/serve';
import { startSynthRuntime } from '../lib/synth/runtime';
import { UnservedWebAclError } from '../lib/synth/waf';

serve({
  command: 'npm run start:synth',
  what: ' (synthesized assembly)',
  start: () => startSynthRuntime({ progress: (line) => process.stderr.write(`  ${line}\n`) }),
  details: (rt, startedMs) => [
    ['assembly', rt.assembly.dir],
    ['functions', `${rt.functions.size} bundles, IAM enforced by the local AWS endpoint ${rt.endpoint.url}`],
    ['started in', `${(startedMs / 1000).toFixed(1)} s`],
  ],
  isUserError: (e) => e instanceof UnservedWebAclError,
});
