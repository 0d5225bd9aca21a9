/**
 * The MCP suite (test/e2e/mcp.test.ts) again, against `npm run start:synth`: the official SDK
 * client against the synthesized MCP function's bundle behind the template's streamed route and
 * authorizer, every AWS call it makes checked against its IAM role (an execute's writes, the
 * waited read, a task's cancel, file links).
 */
import { useE2eMode } from '../../support/runtime';
import '../mcp.test';

useE2eMode('synth');
