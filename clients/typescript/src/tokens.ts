/** Minting the two host tokens: the agent's per-turn token and the maintainer's. */

import { randomBytes } from 'node:crypto';

import { SignJWT } from 'jose';

import type { HostKey } from './keys.js';
import * as rules from './rules.js';
import type { ToolName } from './rules.js';

/** Default token lifetime: the longest the service accepts. */
export const DEFAULT_TTL_S = rules.MAX_LIFETIME_S;

/** Who the tokens are for: the tenant's registration with one deployment. */
export interface Deployment {
  /** The registered host (`ENGRAM_HOST_ISSUER`). */
  issuer: string;
  /** The deployment (`ENGRAM_AUDIENCE`). */
  audience: string;
  /** The tenant id (`ENGRAM_TENANT_ID`). */
  tenant: string;
}

/** The claims of one agent turn (docs/mcp.md, "The host invocation context"). */
export interface AgentTokenOptions extends Deployment {
  workspace: string;
  /** The bound purpose: search/get/capture arguments must name the same. */
  purposeRef: string;
  /** The tools granted to this turn (only these are listed and callable). */
  capabilities: readonly ToolName[];
  /** The actor (never `host:adjudication` nor `system:expiry-sweeper`). */
  principal: string;
  agentId: string;
  /** Default: a fresh `sess-…` id. */
  session?: string;
  /** Copied into every envelope's `auditId`. Default: a fresh `audit-…` id. */
  auditId?: string;
  /** Tools the host marks confirmation-required (withdraw/forget always are). */
  confirmRequired?: readonly ToolName[];
  /** The approved confirmation this turn carries (an `elicitationRef`). */
  confirmationRef?: string;
  /** 1 to 300 s. Default 300. */
  ttlSeconds?: number;
  /** The turn's deadline, epoch milliseconds. Default: the token's expiry. */
  deadlineMs?: number;
  /** The clock, epoch milliseconds. Default `Date.now()`. */
  nowMs?: number;
}

/** A host-operator token for the `/host` routes: exactly one of `workspaces` or
 * `tenantWide: true`. */
export interface MaintainerTokenOptions extends Deployment {
  /** Who acts (recorded as the requester/approver of what this token does). */
  subject: string;
  workspaces?: readonly string[];
  tenantWide?: boolean;
  ttlSeconds?: number;
  nowMs?: number;
}

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

function times(nowMs: number | undefined, ttlSeconds: number | undefined) {
  const iat = Math.floor((nowMs ?? Date.now()) / 1000);
  return { iat, nbf: iat, exp: iat + rules.lifetime(ttlSeconds ?? DEFAULT_TTL_S) };
}

/**
 * Sign `claims` as they are, with `key` (its `kid` in the header) and no rule checked: the
 * conformance tests forge with it what the service must refuse. A host mints with
 * `mintAgentToken` / `mintMaintainerToken`.
 */
export async function signClaims(key: HostKey, claims: rules.Claims): Promise<string> {
  return new SignJWT({ ...claims })
    .setProtectedHeader({ alg: key.algorithm, kid: key.kid })
    .sign(key.privateKey);
}

/**
 * A host-signed token for one agent turn. Rejects with a `ClaimRuleError` (its `rule`
 * named) any argument the service would refuse, before signing.
 */
export async function mintAgentToken(key: HostKey, options: AgentTokenOptions): Promise<string> {
  const t = times(options.nowMs, options.ttlSeconds);
  const claims: Record<string, unknown> = {
    iss: rules.ref('issuer', options.issuer),
    aud: rules.ref('audience', options.audience),
    sub: rules.principal(options.principal),
    jti: hex(16),
    ...t,
    tenant: rules.scopeId('tenant', options.tenant),
    workspace: rules.scopeId('workspace', options.workspace),
    principal: options.principal,
    agent_id: rules.ref('agentId', options.agentId),
    session: rules.ref('session', options.session ?? 'sess-' + hex(8)),
    purpose_ref: rules.ref('purposeRef', options.purposeRef),
    audit_id: rules.ref('auditId', options.auditId ?? 'audit-' + hex(12)),
    deadline: rules.deadline(options.deadlineMs ?? t.exp * 1000),
    capabilities: rules.tools('capabilities', options.capabilities),
    confirm_required: rules.tools('confirmRequired', options.confirmRequired ?? []),
  };
  if (options.confirmationRef !== undefined) {
    claims.confirmation_ref = rules.ref('confirmationRef', options.confirmationRef);
  }
  rules.checkAgentClaims(claims);
  return signClaims(key, claims);
}

/**
 * A host-operator token (`perm` read + maintain) for the `/host` routes, scoped to
 * `workspaces: [...]` or `tenantWide: true` (exactly one). Never give it to an agent: the
 * agent path refuses it.
 */
export async function mintMaintainerToken(
  key: HostKey,
  options: MaintainerTokenOptions,
): Promise<string> {
  const scope = rules.workspaceScope(options.workspaces, options.tenantWide);
  const claims: Record<string, unknown> = {
    iss: rules.ref('issuer', options.issuer),
    aud: rules.ref('audience', options.audience),
    sub: rules.ref('subject', options.subject),
    jti: hex(16),
    ...times(options.nowMs, options.ttlSeconds),
    tenant: rules.scopeId('tenant', options.tenant),
    perm: ['read', 'maintain'],
  };
  if (scope === null) {
    claims.tenant_wide = true;
  } else {
    claims.workspaces = scope;
  }
  rules.checkMaintainerClaims(claims);
  return signClaims(key, claims);
}
