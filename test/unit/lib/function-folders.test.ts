/**
 * A function is a folder under functions/ with a handler.ts, and the route table (lib/routes.ts)
 * and its workers are the list of them: a handler folder that no route or worker names would
 * be deployed nowhere and served by nothing, and a name without its folder cannot be built.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { allFunctionNames } from '../../../lib/stacks/permissions';

const FUNCTIONS = join(__dirname, '..', '..', '..', 'functions');

describe('functions/<name>/handler.ts', () => {
  it('is a route handler of lib/routes.ts or a worker, for every folder that has one, and every such name has its folder', () => {
    // Prepare
    const folders = readdirSync(FUNCTIONS, { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(join(FUNCTIONS, d.name, 'handler.ts')))
      .map((d) => d.name)
      .sort();

    // Assess
    expect(folders).toEqual([...allFunctionNames()].sort());
  });
});
