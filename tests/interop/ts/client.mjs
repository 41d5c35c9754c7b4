// Interop check: the official TypeScript MCP SDK client against an engram-memory endpoint.
//
// Every tool call goes through `client.callTool`, which validates `structuredContent`
// against the tool's published `outputSchema` (compiled with Ajv when `listTools` runs);
// a rejected envelope surfaces as an McpError and makes this script exit non-zero.
//
// Usage:
//   ENGRAM_TOKEN=<jwt> ENGRAM_PURPOSE=<purpose_ref> node client.mjs <mcp-url>
//       the journey: list, capture -> request_admission -> search -> get, then the
//       failure calls (unknown record_id, extra field, unconfirmed withdraw/forget when
//       granted).
//   ENGRAM_TOKEN=<jwt> ENGRAM_CALL='{"tool": "...", "arguments": {...}}' node client.mjs <mcp-url>
//       one call (used by the test for the confirmed withdraw/forget and refusals).
// The URL may also come from ENGRAM_MCP_URL. The token is read from the environment only,
// so it never appears in a process listing.
//
// Output: one JSON line on stdout. Exit status: 0 all as expected; 1 the SDK rejected a
// published schema or a result (the interop failure this script exists to catch);
// 2 a protocol or transport error; 3 an envelope that is valid but not what was expected.

import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

const PREFIX = 'engram_memory_';
const SCHEMA_REJECTION = /output schema|structured content/i;
const EXIT = { ok: 0, schema: 1, protocol: 2, unexpected: 3 };

function sdkVersion() {
  const url = new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')).version;
}

function token(bytes = 8) {
  return randomBytes(bytes).toString('hex');
}

/** Capture arguments whose digests really are the SHA-256 of the cited text. */
function captureArguments(purpose, text) {
  const digest = 'sha256:' + createHash('sha256').update(text, 'utf8').digest('hex');
  return {
    idempotency_key: 'ts-interop-capture-' + token(),
    payload: {
      schema_version: 2,
      purpose_ref: purpose,
      valid_time: { t: 1790000000000 },
      components: [{ component_id: 'c1', kind: 'decision', text, citation_ids: ['cit1'] }],
      primary_component_id: 'c1',
      primary_event: { at: 1790000000000, type_ref: 'event:decided', citation_id: 'cit1' },
      citations: [{
        citation_id: 'cit1',
        source_ref: 'doc:runbook',
        locator: { scheme: 'url', value: 'https://wiki.example/runbook' },
        content_digest: digest,
      }],
    },
    evidence: { evidence_ref: 'ev:runbook', evidence_digest: digest, citation_ids: ['cit1'] },
  };
}

/** Collects one entry per step and the worst exit status seen. */
class Report {
  constructor() {
    this.status = EXIT.ok;
    this.calls = [];
    this.out = { sdkVersion: sdkVersion(), calls: this.calls };
  }

  fail(status) {
    this.status = Math.max(this.status, status);
  }

  print() {
    this.out.exitStatus = this.status;
    process.stdout.write(JSON.stringify(this.out) + '\n');
  }
}

/** The listed tools, with their schemas compiled by the SDK's own Ajv provider. */
class Catalog {
  constructor(tools) {
    this.ajv = new AjvJsonSchemaValidator();
    this.tools = new Map(tools.map((tool) => [tool.name, tool]));
    this.input = new Map();
    this.output = new Map();
    for (const tool of tools) {
      this.input.set(tool.name, this.ajv.getValidator(tool.inputSchema));
      if (tool.outputSchema) this.output.set(tool.name, this.ajv.getValidator(tool.outputSchema));
    }
  }

  inputAccepts(name, args) {
    const validate = this.input.get(name);
    return validate ? validate(args).valid : null;
  }

  /** A closed schema must refuse an envelope with one more property: proof it was applied. */
  rejectsTampered(name, structured) {
    const validate = this.output.get(name);
    return validate ? !validate({ ...structured, unexpected_property: true }).valid : null;
  }
}

function summarize(name, args, result, client, catalog) {
  const structured = result.structuredContent;
  const text = result.content?.length === 1 && result.content[0].type === 'text'
    ? result.content[0].text : null;
  let textCopy = null;
  try {
    textCopy = text === null ? null : JSON.parse(text);
  } catch {
    textCopy = null;
  }
  return {
    isError: result.isError === true,
    ok: structured?.ok ?? null,
    code: structured?.error?.code ?? null,
    retriable: structured?.error?.retriable ?? null,
    textEqualsStructured: structured !== undefined && isDeepStrictEqual(textCopy, structured),
    sdkValidated: structured !== undefined && client.getToolOutputValidator(name) !== undefined,
    tamperedRejected: structured === undefined ? null : catalog.rejectsTampered(name, structured),
    inputSchemaAccepts: catalog.inputAccepts(name, args),
    structuredContent: structured ?? null,
  };
}

/** One `callTool` (SDK-validated); `expect` is 'ok', an error code, or a JSON-RPC code. */
async function call(ctx, label, short, args, expect) {
  const name = PREFIX + short;
  const entry = { label, tool: name, expect };
  ctx.report.calls.push(entry);
  try {
    const result = await ctx.client.callTool({ name, arguments: args });
    Object.assign(entry, summarize(name, args, result, ctx.client, ctx.catalog));
    const got = entry.ok ? 'ok' : entry.code;
    const consistent = entry.textEqualsStructured && entry.isError === !entry.ok
      && entry.sdkValidated && entry.tamperedRejected;
    if (got !== expect || !consistent) ctx.report.fail(EXIT.unexpected);
    return entry.structuredContent;
  } catch (error) {
    const code = typeof error?.code === 'number' ? error.code : null;
    const message = String(error?.message ?? error);
    entry.protocolError = { code, message };
    entry.schemaRejected = SCHEMA_REJECTION.test(message);
    if (entry.schemaRejected) ctx.report.fail(EXIT.schema);
    else if (code !== expect) ctx.report.fail(EXIT.protocol);
    return null;
  }
}

async function searchUntilFound(ctx, query, recordId) {
  const deadline = Date.now() + 20000;
  for (let attempt = 1; ; attempt += 1) {
    const found = await call(ctx, 'search', 'search', { query, purpose_ref: ctx.purpose }, 'ok');
    const ids = found?.output?.value?.records?.map((packet) => packet.record.record_id) ?? [];
    ctx.report.out.searchAttempts = attempt;
    if (found === null || ids.includes(recordId) || Date.now() > deadline) {
      ctx.report.out.searchFoundRecord = ids.includes(recordId);
      return;
    }
    ctx.report.calls.pop(); // keep only the final poll in the report
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

async function journey(ctx) {
  const marker = 'wombat' + token(3);
  const text = `Production deploys run only from the release branch (${marker}).`;
  const captured = await call(ctx, 'capture', 'capture', captureArguments(ctx.purpose, text), 'ok');
  const candidateId = captured?.output?.value?.candidate_id;
  if (!candidateId) return;
  const admitted = await call(ctx, 'request_admission', 'request_admission',
    { candidate_id: candidateId, idempotency_key: 'ts-interop-admit-' + token() }, 'ok');
  const recordId = admitted?.output?.value?.outcome?.record_id;
  ctx.report.out.recordId = recordId ?? null;
  if (!recordId) return;
  await searchUntilFound(ctx, marker, recordId);
  await call(ctx, 'get', 'get', { record_id: recordId, purpose_ref: ctx.purpose }, 'ok');
  await failures(ctx, recordId);
}

async function failures(ctx, recordId) {
  await call(ctx, 'get_unknown', 'get',
    { record_id: 'mem_' + 'a'.repeat(26), purpose_ref: ctx.purpose }, 'NOT_FOUND');
  const extra = { ...captureArguments(ctx.purpose, 'An extra field must be refused.'),
    confirmed: true };
  await call(ctx, 'capture_extra_field', 'capture', extra, 'INVALID_SCHEMA');
  if (ctx.catalog.tools.has(PREFIX + 'withdraw')) {
    const pending = await call(ctx, 'capture_to_withdraw', 'capture',
      captureArguments(ctx.purpose, 'A draft that will be withdrawn ' + token(3)), 'ok');
    ctx.report.out.pendingCandidateId = pending?.output?.value?.candidate_id ?? null;
    await call(ctx, 'withdraw_unconfirmed', 'withdraw', {
      candidate_id: ctx.report.out.pendingCandidateId ?? 'cand_unknown',
      idempotency_key: 'ts-interop-withdraw-' + token(), reason_ref: 'reason:interop',
    }, 'gate_failed');
  }
  if (ctx.catalog.tools.has(PREFIX + 'forget')) {
    await call(ctx, 'forget_unconfirmed', 'forget', {
      record_id: recordId, idempotency_key: 'ts-interop-forget-' + token(),
      reason_ref: 'reason:interop',
    }, 'gate_failed');
  }
}

async function main() {
  const url = process.argv[2] ?? process.env.ENGRAM_MCP_URL;
  const bearer = process.env.ENGRAM_TOKEN;
  const report = new Report();
  if (!url || !bearer) {
    report.out.usageError = 'set the MCP URL (argv or ENGRAM_MCP_URL) and ENGRAM_TOKEN';
    report.fail(EXIT.protocol);
    return report;
  }
  const client = new Client({ name: 'engram-ts-interop', version: '0.1.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  try {
    await client.connect(transport);
    report.out.protocolVersion = transport.protocolVersion ?? null;
    report.out.serverName = client.getServerVersion()?.name ?? null;
    const { tools } = await client.listTools();
    report.out.tools = tools.map((tool) => tool.name);
    report.out.withOutputSchema = tools.filter((tool) => tool.outputSchema).map((t) => t.name);
    const ctx = { client, report, purpose: process.env.ENGRAM_PURPOSE, catalog: new Catalog(tools) };
    const single = process.env.ENGRAM_CALL ? JSON.parse(process.env.ENGRAM_CALL) : null;
    if (single) {
      await call(ctx, single.label ?? single.tool, single.tool, single.arguments,
        single.expect ?? 'ok');
    } else {
      await journey(ctx);
    }
  } catch (error) {
    const message = String(error?.message ?? error);
    report.out.fatal = { code: typeof error?.code === 'number' ? error.code : null, message };
    report.fail(SCHEMA_REJECTION.test(message) || /schema/i.test(message) ? EXIT.schema
      : EXIT.protocol);
  } finally {
    await client.close().catch(() => undefined);
  }
  return report;
}

const report = await main();
report.print();
process.exitCode = report.status;
