/**
 * The `awslambda` global of Lambda's Node.js runtime, for the local runtimes: `streamifyResponse`
 * marks a handler as streaming with the runtime's own symbol, and `HttpResponseStream.from`
 * sends the HTTP metadata as JSON and eight NUL bytes just before the first `write()`, as the
 * runtime does (aws-lambda-nodejs-runtime-interface-client, src/stream/http-response-stream.ts).
 * One source, plain JavaScript: `npm start` evaluates it in process, start:synth in each
 * function's worker before the bundle loads (lib/synth/function-host.ts).
 *
 * A quirk kept on purpose: like the runtime's, the metadata is written by `write()` only, so a
 * handler that calls `end(chunk)` without writing first sends no metadata, which API Gateway
 * answers with a 5xx. Handlers must write (an empty chunk will do) before they end.
 */
export const AWSLAMBDA_SHIM_SOURCE = String.raw`(() => {
  // The AWS SDK (@aws/lambda-invoke-store) may have put its own object there already: add to it.
  const g = globalThis.awslambda || (globalThis.awslambda = {});
  if (typeof g.streamifyResponse === 'function') return;
  const MARK = Symbol.for('aws.lambda.runtime.handler.streaming');
  Object.assign(g, {
    streamifyResponse(handler) {
      Object.defineProperty(handler, MARK, { value: 'response' });
      return handler;
    },
    HttpResponseStream: {
      from(stream, metadata) {
        const prelude = JSON.stringify(metadata);
        const write = stream.write.bind(stream);
        let first = true;
        stream.write = (chunk, ...rest) => {
          if (first) {
            first = false;
            write(prelude);
            write(new Uint8Array(8));
          }
          return write(chunk, ...rest);
        };
        return stream;
      },
    },
  });
})();`;

/** Installs the stand-in in this process (a no-op where a runtime's own `awslambda` exists). */
export function installAwslambda(): void {
  // Function, not vm.runInThisContext: under a test runner's vm context the latter would install
  // the global in the outer realm, out of the handlers' sight.
  new Function(AWSLAMBDA_SHIM_SOURCE)();
}

installAwslambda();
