// Types from OpenAPI documents with openapi-typescript's programmatic API: `node
// openapi-types.mjs <document.json> <out.ts> [<document.json> <out.ts>]…`. A script of its own
// because openapi-typescript loads ESM-only packages that Jest's CommonJS runtime cannot require.
import { readFileSync, writeFileSync } from 'node:fs';
import openapiTS, { astToString } from 'openapi-typescript';

const args = process.argv.slice(2);
for (let i = 0; i + 1 < args.length; i += 2) {
  const document = JSON.parse(readFileSync(args[i], 'utf8'));
  writeFileSync(args[i + 1], astToString(await openapiTS(document)));
}
