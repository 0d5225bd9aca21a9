#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so `npx pipegate` works on a fresh clone without a build.
require('tsx/cjs');
require('./pipegate.ts');
