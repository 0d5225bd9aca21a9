// The CLI's prebuilt bundle (dist/pipegate.js, written by `npm install`'s prepare script through
// bin/build-cli.ts): used only while every source it was built from holds what it held then, so
// an edited checkout never runs stale code. Plain CommonJS: it runs before any compiler is loaded.
'use strict';
const { createHash } = require('node:crypto');
const { readFileSync, renameSync, statSync, writeFileSync } = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const vm = require('node:vm');

const ROOT = path.join(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
const BUNDLE = 'pipegate.js';
/** The bundle's inputs (repository-relative path → SHA-256 of the content it was built from), beside it. */
const INPUTS = 'pipegate.inputs.json';

const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

/**
 * The bundle's path when it is current, else null. A source modified after the build is read
 * and compared by content: a checkout, a pull or an editor's save that leaves the bytes as they
 * were (they touch files) keeps the bundle, and only a real change sends the CLI to its sources.
 */
function freshBundle(dist = DIST, root = ROOT) {
  try {
    const file = path.join(dist, BUNDLE);
    const built = statSync(file).mtimeMs;
    const inputs = JSON.parse(readFileSync(path.join(dist, INPUTS), 'utf8'));
    // A list without hashes (an older build): any newer source makes it stale.
    const entries = Array.isArray(inputs) ? inputs.map((p) => [p, null]) : Object.entries(inputs);
    for (const [input, hash] of entries) {
      const source = path.join(root, input);
      if (hash === '') return null;
      if (statSync(source).mtimeMs > built && (hash === null || sha256(source) !== hash)) return null;
    }
    return file;
  } catch {
    return null;
  }
}

/**
 * Runs the bundle as `require` would, with V8's code cache beside it: compiling the 1 MB
 * bundle is half of a start, and Node 20 has no compile cache of its own. A cache from another
 * Node version is rejected by V8 and written again.
 */
function runBundle(file) {
  const cacheFile = `${file}.v8cache`;
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  const script = new vm.Script(Module.wrap(readFileSync(file, 'utf8')), { filename: file, cachedData });
  const mod = new Module(file, module);
  mod.filename = file;
  mod.paths = Module._nodeModulePaths(path.dirname(file));
  script.runInThisContext().call(mod.exports, mod.exports, Module.createRequire(file), mod, file, path.dirname(file));
  if (cachedData === undefined || script.cachedDataRejected) {
    try {
      const partial = `${cacheFile}.${process.pid}`;
      writeFileSync(partial, script.createCachedData());
      renameSync(partial, cacheFile);
    } catch {
      // A read-only install: every start compiles, as without a cache.
    }
  }
}

module.exports = { ROOT, DIST, BUNDLE, INPUTS, freshBundle, runBundle, sha256 };
