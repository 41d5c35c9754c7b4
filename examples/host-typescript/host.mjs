// A host that plugs engram-memory into its agents: a token per agent turn, the granted tools,
// capture → request admission → search, and a forget walked through the confirmation with
// the host route approving in the human's place (a real host shows it to a person, e.g. on
// the review page). Run against `make serve`: see README.md.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { HostClient, HostKey, createMemoryTransport, mintAgentToken, mintMaintainerToken } from '@engram-memory/host';

const home = process.env.ENGRAM_LOCAL_HOME ?? join(homedir(), '.engram-memory');
const local = JSON.parse(readFileSync(join(home, 'local.json'), 'utf8'));
const key = HostKey.fromPem(readFileSync(join(home, 'host_key.pem'), 'utf8'));
const base = process.env.ENGRAM_BASE_URL ?? 'http://127.0.0.1:8787';
const deployment = { issuer: local.issuer, audience: local.audience, tenant: local.tenant };
const workspace = process.env.ENGRAM_WORKSPACE ?? 'default';
const purpose = 'purpose:host-example';
const user = { principal: 'user-42', agentId: 'support-agent' };
const id = () => randomBytes(8).toString('hex');

/** One agent turn: a fresh token, an MCP client, the turn's work. */
async function turn(grant, work, confirmationRef) {
  const mint = () => mintAgentToken(key, { ...deployment, ...user, workspace, purposeRef: purpose,
    capabilities: grant, confirmationRef });
  const client = new Client({ name: 'host-example', version: '0.1.0' });
  await client.connect(createMemoryTransport(base + '/mcp', mint));
  try {
    const tools = (await client.listTools()).tools.map((t) => t.name);
    console.log('granted tools:', tools.join(', '));
    return await work(async (tool, args) => {
      const result = (await client.callTool({ name: 'engram_memory_' + tool, arguments: args })).structuredContent;
      if (!result.ok) throw new Error(`${tool} refused: ${result.error.code}`);
      return result.output.value;
    });
  } finally {
    await client.close();
  }
}

const text = `Support decision ${id()}: refunds over 100 EUR need a second approver.`;
const digest = 'sha256:' + createHash('sha256').update(text, 'utf8').digest('hex');
const recordId = await turn(['search', 'get', 'capture', 'request_admission'], async (call) => {
  const captured = await call('capture', {
    idempotency_key: 'cap-' + id(),
    payload: { schema_version: 2, purpose_ref: purpose, valid_time: { t: Date.now() },
      components: [{ component_id: 'c1', kind: 'decision', text, citation_ids: ['cit1'] }],
      primary_component_id: 'c1', primary_event: { at: Date.now(), type_ref: 'event:decided', citation_id: 'cit1' },
      citations: [{ citation_id: 'cit1', source_ref: 'doc:policy',
        locator: { scheme: 'url', value: 'https://wiki.example/refunds' }, content_digest: digest }] },
    evidence: { evidence_ref: 'ev:policy', evidence_digest: digest, citation_ids: ['cit1'] },
  });
  const admitted = await call('request_admission', { candidate_id: captured.candidate_id, idempotency_key: 'adm-' + id() });
  console.log('admission:', admitted.outcome.status);
  const found = await call('search', { query: 'refunds second approver', purpose_ref: purpose });
  const hit = found.records.some((packet) => packet.record.record_id === admitted.outcome.record_id);
  console.log('search found it:', hit);
  return admitted.outcome.record_id;
});

// The forget: the host asks, a human approves, the agent's next turn carries the reference.
const host = new HostClient(base, () => mintMaintainerToken(key, { ...deployment, subject: 'host-example', workspaces: [workspace] }));
const forget = { record_id: recordId, idempotency_key: 'fgt-' + id(), reason_ref: 'reason:owner-request' };
const asked = await host.requestConfirmation({ workspaceId: workspace, capability: 'forget', principal: user.principal, arguments: forget });
await host.decideConfirmation(asked.elicitationRef, { workspaceId: workspace, decision: 'approve', approver: 'human-reviewer' });
const receipt = await turn(['forget'], (call) => call('forget', forget), asked.elicitationRef);
console.log(`ok: forgot ${recordId} (${receipt.receipt.to_state})`);
