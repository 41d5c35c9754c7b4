/** engram-memory's host kit: host keys, invocation tokens, host routes, an MCP transport. */

export { HostClient, HostRouteError } from './client.js';
export type { ConfirmationRequest, GatedCapability, Json, PageQuery } from './client.js';
export { HostKey, HostKeyRing, MAX_HOST_KEYS, defaultKid } from './keys.js';
export type { Algorithm, Jwks, KeyType, PublicJwk } from './keys.js';
export {
  ClaimRuleError,
  INTERNAL_PRINCIPALS,
  MAX_LIFETIME_S,
  MAX_MAINTAINER_WORKSPACES,
  MAX_REF_BYTES,
  TOOLS,
  checkAgentClaims,
  checkMaintainerClaims,
} from './rules.js';
export type { ClaimRule, Claims, ToolName } from './rules.js';
export { DEFAULT_TTL_S, mintAgentToken, mintMaintainerToken, signClaims } from './tokens.js';
export type { AgentTokenOptions, Deployment, MaintainerTokenOptions } from './tokens.js';
export { DEFAULT_REFRESH_MARGIN_S, RefreshingBearer, createMemoryTransport } from './transport.js';
export type { MemoryTransportOptions, Mint } from './transport.js';
