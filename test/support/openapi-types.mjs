// Types from OpenAPI documents with openapi-typescript's programmatic API: `node
// openapi-types.mjs [--default-non-nullable=false] <document.json> <out.ts> […]`, each document
// with the options named before it. A script of its own because openapi-typescript loads
// ESM-only packages that Jest's CommonJS runtime cannot require.
//
// `--default-non-nullable=false` is openapi-typescript's `--default-non-nullable false`: by
// default it types a property that has a `default` as always present, outside request bodies
// written inline, so a shared schema's field with a default (a node's `join`, an http node's
// `method`) becomes one the owner must send. In pipegate's documents a `default` says what an
// absent field means; the service stores a definition as sent and answers it so.
import { readFileSync, writeFileSync } from 'node:fs';
import openapiTS, { astToString } from 'openapi-typescript';

const options = {};
const args = process.argv.slice(2);
for (let i = 0; i < args.length;) {
  if (args[i] === '--default-non-nullable=false') {
    options.defaultNonNullable = false;
    i += 1;
    continue;
  }
  if (i + 1 >= args.length) throw new Error(`no output file for ${args[i]}`);
  const document = JSON.parse(readFileSync(args[i], 'utf8'));
  writeFileSync(args[i + 1], astToString(await openapiTS(document, { ...options })));
  i += 2;
}
