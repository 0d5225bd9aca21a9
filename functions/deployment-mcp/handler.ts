import { lambdaDeps } from '../adapters/deps';
import { callerLimits } from '../services/limits.service';
import { bodyText, callerAuth, streamedHttpHandler } from '../adapters/api';
import { streamedAnswerOf, webRequestOf } from '../adapters/mcp-http';
import { mcpUrl } from '../core/views';
import { serveMcp } from '../services/mcp.service';

/**
 * POST /v1/deployments/{deployment_id}/mcp: the deployment's MCP server (Streamable HTTP,
 * stateless), answered as it is written: JSON-RPC answers and progress on one SSE stream per
 * request. GET: 405, no server-initiated stream.
 */
export const createHandler = streamedHttpHandler(
  async (req) => {
    const deploymentId = req.param('deployment_id');
    const answer = await serveMcp(req.deps, callerAuth(req.event), {
      deploymentId,
      baseUrl: req.baseUrl,
      request: webRequestOf(req, mcpUrl(req.baseUrl, deploymentId)),
      bodyText: bodyText(req.event),
    });
    return streamedAnswerOf(answer.response, answer.done);
  },
  { inlineAssets: true, gate: callerLimits },
);

export const handler = createHandler(lambdaDeps);
