/**
 * `npm run openapi`: writes docs/openapi.json, the whole-service document, from the one source
 * both it and the per-deployment documents are built from (functions/core/openapi-shared.ts).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serviceOpenApiText } from '../functions/core/openapi-service';
import { ROUTES } from '../lib/routes';

const file = join(__dirname, '..', 'docs', 'openapi.json');
writeFileSync(file, serviceOpenApiText(ROUTES));
process.stdout.write(`wrote ${file}\n`);
