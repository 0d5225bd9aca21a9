/**
 * `npm start`: the whole of pipegate on this machine. Data lives in ./.pipegate (or
 * PIPEGATE_DATA_DIR) and survives restarts; Ctrl-C drains and stops it (lib/local/serve.ts).
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import { startRuntime } from '../lib/local/runtime';
import { serve } from '../lib/local/serve';

serve({
  command: 'npm start',
  start: () => startRuntime(),
  details: (rt) => (rt.deps.config.publicUrl ? [['answers name', `${rt.deps.config.publicUrl} (PIPEGATE_PUBLIC_URL)`]] : []),
});
