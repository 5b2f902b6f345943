/**
 * The proxy's routes, named once: the router (app.ts) answers 405 on these paths for other methods,
 * and the access log and metrics (observe.ts) label requests by them (anything else is `unmatched`).
 */
export const PROXY_PATHS: ReadonlySet<string> = new Set([
  "/healthz",
  "/metrics",
  "/v1/models",
  "/v1/chat/completions",
  "/v1/responses",
  "/v1/messages",
  "/v1/completions",
  "/v1/holds"
])

/** The MCP gate's route (src/proxy/mcp-route.ts), as the access log and metrics label it. */
export const MCP_ROUTE = "/mcp/:server/:arm"

/** true for a path of the MCP gate's route: `/mcp/<server>/<arm>` */
export const isMcpPath = (path: string): boolean => /^\/mcp\/[^/]+\/[^/]+$/.test(path)
