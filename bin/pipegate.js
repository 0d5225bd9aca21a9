#!/usr/bin/env node
// The prebuilt bundle when it is current (bin/cli-bundle.js); otherwise the TypeScript CLI through
// tsx, so `npx pipegate` also works on a checkout without a build or with edited sources.
const launcher = require('./cli-bundle');
const bundle = launcher.freshBundle();
if (bundle) {
  launcher.runBundle(bundle);
} else {
  require('tsx/cjs');
  require('./pipegate.ts');
}
