// The kit against a running engram-memory service (run by tests/e2e/test_typescript_host_kit.py).
//
// Env: ENGRAM_BASE_URL, ENGRAM_HOST_KEY_PEM (path), ENGRAM_ISSUER, ENGRAM_AUDIENCE,
// ENGRAM_TENANT, ENGRAM_WORKSPACE, ENGRAM_PURPOSE, ENGRAM_CLAIM_CASES (path of the Python
// kit's conformance matrix as JSON: {controls: {agent, maintainer}, agent: [...],
// maintainer: [...]}, each case {name, claims, rule}). Prints one JSON report line; the
// Python test asserts on it. Forged tokens are signed with `signClaims`, which skips the
// kit's checks, so the service's own refusal is what is observed.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ClaimRuleError, HostClient, HostKey, HostRouteError, TOOLS, checkAgentClaims,
  checkMaintainerClaims, createMemoryTransport, mintAgentToken, mintMaintainerToken, signClaims,
} from '../dist/index.js';

const env = process.env;
const base = env.ENGRAM_BASE_URL;
const mcpUrl = base + '/mcp';
const key = HostKey.fromPem(readFileSync(env.ENGRAM_HOST_KEY_PEM, 'utf8'));
const deployment = { issuer: env.ENGRAM_ISSUER, audience: env.ENGRAM_AUDIENCE, tenant: env.ENGRAM_TENANT };
const workspace = env.ENGRAM_WORKSPACE;
const purpose = env.ENGRAM_PURPOSE;
const agent = { ...deployment, workspace, purposeRef: purpose, capabilities: [...TOOLS],
  principal: 'ts-kit-user', agentId: 'ts-kit-agent' };
const report = { steps: {}, rules: [] };
const hex = (n = 8) => randomBytes(n).toString('hex');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function connect(transport) {
  const client = new Client({ name: 'engram-ts-kit-interop', version: '0.1.0' });
  await client.connect(transport);
  return client;
}

function captureArguments(text) {
  const digest = 'sha256:' + createHash('sha256').update(text, 'utf8').digest('hex');
  return {
    idempotency_key: 'ts-kit-capture-' + hex(),
    payload: {
      schema_version: 2, purpose_ref: purpose, valid_time: { t: 1790000000000 },
      components: [{ component_id: 'c1', kind: 'decision', text, citation_ids: ['cit1'] }],
      primary_component_id: 'c1',
      primary_event: { at: 1790000000000, type_ref: 'event:decided', citation_id: 'cit1' },
      citations: [{ citation_id: 'cit1', source_ref: 'doc:runbook',
        locator: { scheme: 'url', value: 'https://wiki.example/runbook' }, content_digest: digest }],
    },
    evidence: { evidence_ref: 'ev:runbook', evidence_digest: digest, citation_ids: ['cit1'] },
  };
}

function envelope(result) {
  return result.structuredContent;
}

// 1. A kit-minted agent token: list, capture, admit, search, through the SDK client.
const client = await connect(createMemoryTransport(mcpUrl, () => mintAgentToken(key, agent)));
const listed = await client.listTools();
report.steps.tools = listed.tools.map((t) => t.name);
const word = 'kitword' + hex(4);
const captured = envelope(await client.callTool({ name: 'engram_memory_capture',
  arguments: captureArguments(`The ${word} decision: deploys freeze on Fridays.`) }));
report.steps.capture = captured.ok;
const candidateId = captured.output?.value?.candidate_id;
const admitted = envelope(await client.callTool({ name: 'engram_memory_request_admission',
  arguments: { candidate_id: candidateId, idempotency_key: 'ts-kit-admit-' + hex() } }));
report.steps.admission = admitted.ok ? (admitted.output?.value?.outcome?.status ?? 'ok') : admitted.error?.code;
const recordId = admitted.output?.value?.outcome?.record_id;
const found = envelope(await client.callTool({ name: 'engram_memory_search',
  arguments: { query: word, purpose_ref: purpose } }));
report.steps.searchOk = found.ok;
report.steps.searchFound = (found.output?.value?.records ?? [])
  .some((packet) => packet.record.record_id === recordId);
report.steps.recordId = recordId ?? null;
await client.close();

// 2. A maintainer token drives HostClient: a forget walked through the confirmation.
const host = new HostClient(base, () => mintMaintainerToken(key, { ...deployment, subject: 'ts-kit-reviewer',
  workspaces: [workspace] }));
if (recordId) {
  const forget = { record_id: recordId, idempotency_key: 'ts-kit-forget-' + hex(), reason_ref: 'reason:owner-request' };
  const asked = await host.requestConfirmation({ workspaceId: workspace, capability: 'forget',
    principal: agent.principal, arguments: forget, ttlSeconds: 120 });
  const ref = asked.elicitationRef;
  const pending = await host.pendingConfirmations({ workspaceId: workspace });
  report.steps.listedPending = pending.items.some((item) => item.elicitationRef === ref);
  const decided = await host.decideConfirmation(ref, { workspaceId: workspace, decision: 'approve', approver: 'alice' });
  report.steps.decided = decided.state;
  report.steps.shown = (await host.confirmation(ref, { workspaceId: workspace })).state;
  const confirmed = await connect(createMemoryTransport(mcpUrl,
    () => mintAgentToken(key, { ...agent, confirmationRef: ref })));
  const forgotten = envelope(await confirmed.callTool({ name: 'engram_memory_forget', arguments: forget }));
  report.steps.forget = forgotten.output?.value?.receipt?.to_state ?? forgotten.error?.code;
  await confirmed.close();
}
report.steps.held = Array.isArray((await host.heldCandidates({ workspaceId: workspace })).items);
try {
  await host.pendingConfirmations({ workspaceId: 'not-my-workspace' });
  report.steps.otherWorkspace = 200;
} catch (error) {
  report.steps.otherWorkspace = error instanceof HostRouteError ? `${error.status} ${error.code}` : String(error);
}

// 3. The claim-rule matrix: the service refuses each forged token, the kit names the rule.
function baseClaims(nowS) {
  return {
    iss: deployment.issuer, aud: deployment.audience, sub: agent.principal, jti: hex(16),
    iat: nowS, nbf: nowS, exp: nowS + 120, tenant: deployment.tenant, workspace,
    principal: agent.principal, agent_id: agent.agentId, session: 'sess-' + hex(),
    purpose_ref: purpose, audit_id: 'audit-' + hex(), deadline: (nowS + 120) * 1000,
    capabilities: ['search'], confirm_required: [],
  };
}
async function forge(claims) {
  return signClaims(key, claims);
}
async function serviceOnAgent(claims) {
  const token = await forge(claims);
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl),
    { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const probe = await connect(transport);
  try {
    const tools = await probe.listTools();
    if (!tools.tools.some((t) => t.name === 'engram_memory_search')) return 'accepted';
    const result = envelope(await probe.callTool({ name: 'engram_memory_search',
      arguments: { query: 'x', purpose_ref: purpose } }));
    return result.ok ? 'accepted' : result.error.code;
  } catch (error) {
    return error.code === -32603 ? 'untrusted' : `error ${error.code}`;
  } finally {
    await probe.close();
  }
}
async function serviceOnHost(claims) {
  const token = await forge(claims);
  const response = await fetch(`${base}/host/confirmations?workspace_id=${workspace}&state=pending`,
    { headers: { Authorization: `Bearer ${token}` } });
  return response.status === 200 ? 'accepted' : `${response.status}`;
}
async function kitRule(mint) {
  try {
    await mint();
    return 'minted';
  } catch (error) {
    return error instanceof ClaimRuleError ? error.rule : `other ${error}`;
  }
}

// 3a. The Python kit's conformance matrix, case by case: the kit's raw check names the rule
// Python names, and the service refuses the token signed past the check.
const matrix = JSON.parse(readFileSync(env.ENGRAM_CLAIM_CASES, 'utf8'));
report.matrix = {
  agentControl: await serviceOnAgent(matrix.controls.agent),
  maintainerControl: await serviceOnHost(matrix.controls.maintainer),
  cases: [],
};
for (const [path, check, service] of [['agent', checkAgentClaims, serviceOnAgent],
  ['maintainer', checkMaintainerClaims, serviceOnHost]]) {
  for (const { name, claims, rule } of matrix[path]) {
    report.matrix.cases.push({ name, path, rule, kit: await kitRule(() => check(claims)),
      service: await service(claims) });
  }
}

const now = Math.floor(Date.now() / 1000);
const AGENT_CASES = [
  ['lifetime', { exp: now + 301 }, { ttlSeconds: 301 }],
  ['ref', { agent_id: 'a'.repeat(513) }, { agentId: 'a'.repeat(513) }],
  ['ref', { session: 'e\u0301' }, { session: 'e\u0301' }],
  ['no-hash', { workspace: 'ws#x' }, { workspace: 'ws#x' }],
  ['internal-principal', { principal: 'host:adjudication', sub: 'host:adjudication' }, { principal: 'host:adjudication' }],
  ['internal-principal', { principal: 'system:expiry-sweeper', sub: 'system:expiry-sweeper' }, { principal: 'system:expiry-sweeper' }],
  ['capabilities', { capabilities: ['search', 'delete_everything'] }, { capabilities: ['search', 'delete_everything'] }],
  ['deadline', { deadline: -5 }, { deadlineMs: -5 }],
  ['deadline', { deadline: now + 120 }, { deadlineMs: now + 120 }], // seconds: already past
];
report.control = await serviceOnAgent(baseClaims(now));
for (const [rule, claims, options] of AGENT_CASES) {
  report.rules.push({ rule, path: 'agent', service: await serviceOnAgent({ ...baseClaims(now), ...claims }),
    kit: await kitRule(() => mintAgentToken(key, { ...agent, ...options })) });
}
const maintainerBase = { iss: deployment.issuer, aud: deployment.audience, sub: 'r', jti: hex(16),
  iat: now, nbf: now, exp: now + 120, tenant: deployment.tenant, perm: ['read', 'maintain'] };
report.maintainerControl = await serviceOnHost({ ...maintainerBase, workspaces: [workspace] });
const many = Array.from({ length: 65 }, (_, i) => `w${i}`);
const MAINTAINER_CASES = [
  ['maintainer-scope', {}, {}],
  ['maintainer-scope', { workspaces: [workspace], tenant_wide: true }, { workspaces: [workspace], tenantWide: true }],
  ['maintainer-scope', { workspaces: [] }, { workspaces: [] }],
  ['maintainer-scope', { workspaces: [workspace, ...many] }, { workspaces: [workspace, ...many] }],
  ['no-hash', { workspaces: [workspace, 'ws#x'] }, { workspaces: [workspace, 'ws#x'] }],
  ['lifetime', { workspaces: [workspace], exp: now + 400 }, { workspaces: [workspace], ttlSeconds: 400 }],
];
for (const [rule, claims, options] of MAINTAINER_CASES) {
  report.rules.push({ rule, path: 'maintainer', service: await serviceOnHost({ ...maintainerBase, ...claims }),
    kit: await kitRule(() => mintMaintainerToken(key, { ...deployment, subject: 'r', ...options })) });
}

// 4. A session outliving a short token lifetime: the transport mints afresh.
let mints = 0;
const shortLived = () => { mints += 1; return mintAgentToken(key, { ...agent, ttlSeconds: 2 }); };
const long = await connect(createMemoryTransport(mcpUrl, shortLived, { marginSeconds: 1 }));
await long.listTools();
await sleep(8_000); // past exp + the service's 5 s leeway
report.steps.afterExpiry = (await long.listTools()).tools.length;
report.steps.mints = mints;
await long.close();
const stale = await mintAgentToken(key, { ...agent, ttlSeconds: 1 });
await sleep(7_000);
const staleClient = await connect(new StreamableHTTPClientTransport(new URL(mcpUrl),
  { requestInit: { headers: { Authorization: `Bearer ${stale}` } } }));
try {
  await staleClient.listTools();
  report.steps.staleRefused = false;
} catch (error) {
  report.steps.staleRefused = error.code === -32603;
}
await staleClient.close();

process.stdout.write(JSON.stringify(report) + '\n');
