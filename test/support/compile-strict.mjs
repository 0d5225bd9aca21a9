// Compiles TypeScript files under --strict on a worker thread and posts back the diagnostics,
// one line each. The compile takes seconds; done on the test's own thread it would stall the
// event loop and with it the timers that retire idle keep-alive sockets, so the next request
// could go out on a socket the server has just closed (ECONNRESET).
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import ts from 'typescript';

const { files, src, outDir, root } = workerData;
const program = ts.createProgram(files, {
  strict: true,
  noUncheckedIndexedAccess: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.Node16,
  moduleResolution: ts.ModuleResolutionKind.Node16,
  lib: ['lib.es2023.d.ts'],
  types: ['node'],
  typeRoots: [join(root, 'node_modules', '@types')],
  skipLibCheck: true,
  outDir,
});
const emitted = program.emit();
parentPort.postMessage(
  [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].map((d) => {
    const where =
      d.file && d.start !== undefined
        ? `${d.file.fileName.slice(src.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1} `
        : '';
    return `${where}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  }),
);
