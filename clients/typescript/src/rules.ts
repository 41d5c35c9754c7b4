/**
 * The claim rules the service enforces on host tokens, checked before signing.
 *
 * Each refusal is a `ClaimRuleError` whose `rule` names the rule, with the same names as the
 * Python kit (`engram_memory_host.rules`), so both kits report a violation alike. The
 * service's verifier (`engram_memory.host_token`, docs/mcp.md) stays the authority: the
 * interop tests forge each violating token past these checks (`signClaims`) and see the
 * service refuse it. `checkAgentClaims` / `checkMaintainerClaims` check a whole claim set
 * as signed; the mint functions run them before signing.
 */

/** Longest token lifetime the service accepts (`exp - iat`), in seconds. */
export const MAX_LIFETIME_S = 300;
/** Longest opaque reference, in UTF-8 bytes. */
export const MAX_REF_BYTES = 512;
/** Most workspaces one scoped maintainer token may name. */
export const MAX_MAINTAINER_WORKSPACES = 64;
/** The six tools, by their short names (the `capabilities` vocabulary). */
export const TOOLS = ['search', 'get', 'capture', 'request_admission', 'withdraw', 'forget'] as const;
/** A short tool name. */
export type ToolName = (typeof TOOLS)[number];
/** The service's own principals: never an agent's. */
export const INTERNAL_PRINCIPALS: ReadonlySet<string> = new Set([
  'host:adjudication',
  'system:expiry-sweeper',
]);
// Deadlines are epoch milliseconds; anything below this is a value in seconds by mistake.
const MIN_DEADLINE_MS = 10 ** 12;
const UTF8 = new TextEncoder();

/** The rule names a `ClaimRuleError` can carry (shared with the Python kit). */
export type ClaimRule =
  | 'times'
  | 'lifetime'
  | 'jti'
  | 'ref'
  | 'no-hash'
  | 'internal-principal'
  | 'capabilities'
  | 'deadline'
  | 'agent-perm'
  | 'maintainer-perm'
  | 'maintainer-scope';

/** A decoded JWT claim set, as signed (claim names as on the wire). */
export type Claims = Readonly<Record<string, unknown>>;
/** The permission only a maintainer token carries. */
const MAINTAIN = 'maintain';
const AGENT_REFS = ['iss', 'aud', 'agent_id', 'session', 'purpose_ref', 'audit_id'] as const;

/** A token argument breaks one of the service's claim rules (`rule` names it). */
export class ClaimRuleError extends Error {
  /** The rule's short name. */
  readonly rule: ClaimRule;

  constructor(rule: ClaimRule, detail: string) {
    super(`${rule}: ${detail}`);
    this.name = 'ClaimRuleError';
    this.rule = rule;
  }
}

function isInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value);
}

/** 1 to 300 seconds (the service refuses `exp - iat > 300`, and `exp <= iat`). */
export function lifetime(ttlSeconds: unknown): number {
  if (!isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_LIFETIME_S) {
    throw new ClaimRuleError('lifetime', `ttlSeconds must be an integer in 1..${MAX_LIFETIME_S}`);
  }
  return ttlSeconds;
}

/** An opaque reference: a non-empty NFC string of at most 512 UTF-8 bytes. */
export function ref(name: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new ClaimRuleError('ref', `${name} must be a non-empty string`);
  }
  if (UTF8.encode(value).length > MAX_REF_BYTES) {
    throw new ClaimRuleError('ref', `${name} exceeds ${MAX_REF_BYTES} UTF-8 bytes`);
  }
  if (value.normalize('NFC') !== value) {
    throw new ClaimRuleError('ref', `${name} must be NFC-normalized`);
  }
  return value;
}

/** A tenant or workspace id: a reference without `#` (it delimits storage keys). */
export function scopeId(name: string, value: unknown): string {
  const checked = ref(name, value);
  if (checked.includes('#')) {
    throw new ClaimRuleError('no-hash', `${name} must not contain '#'`);
  }
  return checked;
}

/** An agent principal: a reference that is not one of the service's own. */
export function principal(value: unknown): string {
  const checked = ref('principal', value);
  if (INTERNAL_PRINCIPALS.has(checked)) {
    throw new ClaimRuleError('internal-principal', `${checked} is reserved to the service`);
  }
  return checked;
}

/** Short tool names, each one of the six (an unknown name voids the whole token). */
export function tools(name: string, values: unknown): ToolName[] {
  if (!Array.isArray(values)) {
    throw new ClaimRuleError('capabilities', `${name} must be an array of tool names`);
  }
  const unknown = values.filter((v) => !(TOOLS as readonly unknown[]).includes(v));
  if (unknown.length > 0) {
    throw new ClaimRuleError('capabilities', `${name} has unknown tools ${JSON.stringify(unknown)}`);
  }
  return [...values] as ToolName[];
}

/** The turn's deadline in epoch milliseconds (a positive integer, not seconds). */
export function deadline(value: unknown): number {
  if (!isInteger(value) || value <= 0) {
    throw new ClaimRuleError('deadline', 'deadlineMs must be a positive integer');
  }
  if (value < MIN_DEADLINE_MS) {
    throw new ClaimRuleError('deadline', 'deadlineMs is in milliseconds since the epoch');
  }
  return value;
}

/**
 * A maintainer's scope: exactly one of `workspaces` (1 to 64 workspace ids) or
 * `tenantWide: true`. Returns the list, or `null` for a tenant-wide token.
 */
export function workspaceScope(workspaces: unknown, tenantWide: unknown): string[] | null {
  if (tenantWide !== undefined && typeof tenantWide !== 'boolean') {
    throw new ClaimRuleError('maintainer-scope', 'tenantWide must be a boolean');
  }
  const wide = tenantWide === true;
  if ((workspaces === undefined || workspaces === null) === !wide) {
    throw new ClaimRuleError('maintainer-scope', 'give exactly one of workspaces: [...] or tenantWide: true');
  }
  if (wide) {
    return null;
  }
  if (!Array.isArray(workspaces)) {
    throw new ClaimRuleError('maintainer-scope', 'workspaces must be an array of ids');
  }
  // Each id before the count, as the Python kit does: a case breaking both names the same rule.
  const listed = workspaces.map((w) => scopeId('workspace', w));
  if (listed.length === 0 || listed.length > MAX_MAINTAINER_WORKSPACES) {
    throw new ClaimRuleError('maintainer-scope',
      `workspaces must name 1 to ${MAX_MAINTAINER_WORKSPACES} workspaces`);
  }
  return listed;
}

/** `iat`, `nbf`, `exp`: integer seconds, `0 < exp - iat <= 300`. */
export function times(claims: Claims): void {
  const [iat, nbf, exp] = [claims.iat, claims.nbf, claims.exp];
  if (!isInteger(iat) || !isInteger(nbf) || !isInteger(exp)) {
    throw new ClaimRuleError('times', 'iat, nbf and exp must be integer seconds');
  }
  if (exp - iat <= 0 || exp - iat > MAX_LIFETIME_S) {
    throw new ClaimRuleError('lifetime', `exp - iat must be in 1..${MAX_LIFETIME_S} s`);
  }
}

function has(claims: Claims, name: string): boolean {
  return Object.prototype.hasOwnProperty.call(claims, name);
}

function perms(claims: Claims): Set<string> {
  const perm = has(claims, 'perm') ? claims.perm : [];
  const listed = typeof perm === 'string' ? perm.split(/\s+/).filter(Boolean) : perm;
  if (!Array.isArray(listed) || !listed.every((p) => typeof p === 'string')) {
    throw new ClaimRuleError(has(claims, 'workspace') ? 'agent-perm' : 'maintainer-perm',
      'perm must be an array of strings');
  }
  return new Set(listed as string[]);
}

function common(claims: Claims): void {
  times(claims);
  if (typeof claims.jti !== 'string' || claims.jti.length === 0) {
    throw new ClaimRuleError('jti', 'jti is required');
  }
  ref('jti', claims.jti);
  scopeId('tenant', claims.tenant);
}

/**
 * Throw a `ClaimRuleError` for an agent claim set the service would refuse, whatever its
 * configuration (issuer, audience, tenant and workspace equality are the service's own).
 */
export function checkAgentClaims(claims: Claims): void {
  common(claims);
  for (const name of AGENT_REFS) {
    ref(name, claims[name]);
  }
  scopeId('workspace', claims.workspace);
  principal(claims.principal);
  if (perms(claims).has(MAINTAIN)) {
    throw new ClaimRuleError('agent-perm', "an agent token never carries 'maintain'");
  }
  deadline(claims.deadline);
  tools('capabilities', claims.capabilities);
  tools('confirm_required', has(claims, 'confirm_required') ? claims.confirm_required : []);
  if (claims.confirmation_ref !== undefined && claims.confirmation_ref !== null) {
    ref('confirmation_ref', claims.confirmation_ref);
  }
}

/** Throw a `ClaimRuleError` for a maintainer claim set the service would refuse. */
export function checkMaintainerClaims(claims: Claims): void {
  common(claims);
  for (const name of ['iss', 'aud', 'sub']) {
    ref(name, claims[name]);
  }
  const held = perms(claims);
  if (!held.has('read') || !held.has(MAINTAIN)) {
    throw new ClaimRuleError('maintainer-perm', "perm must hold 'read' and 'maintain'");
  }
  const tenantWide = has(claims, 'tenant_wide') ? claims.tenant_wide : false;
  if (tenantWide !== true && tenantWide !== false) {
    throw new ClaimRuleError('maintainer-scope', 'tenant_wide must be the JSON value true');
  }
  if (has(claims, 'workspaces') && !Array.isArray(claims.workspaces)) {
    throw new ClaimRuleError('maintainer-scope', 'workspaces must be an array of ids');
  }
  workspaceScope(has(claims, 'workspaces') ? claims.workspaces : undefined, tenantWide);
}
