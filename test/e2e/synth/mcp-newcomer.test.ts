/**
 * MCP's newcomer walk (test/e2e/mcp-newcomer.test.ts) again, against `npm run start:synth`: the
 * CLI's publish and the official SDK client against the synthesized MCP function's bundle behind
 * the template's streamed route and authorizer, with its IAM role enforced.
 */
import { useE2eMode } from '../../support/runtime';
import '../mcp-newcomer.test';

useE2eMode('synth');
