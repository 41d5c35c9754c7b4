/** `HostClient`: the host-only routes (`/host/...`) of a tenant, with a maintainer token. */

import type { Mint } from './transport.js';

/** The tools a confirmation can be asked for. */
export type GatedCapability = 'capture' | 'request_admission' | 'withdraw' | 'forget';
/** A parsed JSON answer. */
export type Json = Record<string, unknown>;

/** A host route answered an error status (`status`; `code` from its constant body). */
export class HostRouteError extends Error {
  readonly status: number;
  readonly code: string;
  readonly body: Json;

  constructor(status: number, body: Json) {
    const error = (body.error ?? {}) as Json;
    const code = typeof error.code === 'string' ? error.code : 'UNKNOWN';
    super(`host route answered ${status}: ${code}`);
    this.name = 'HostRouteError';
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

/** A request for a human's confirmation of one gated call. */
export interface ConfirmationRequest {
  workspaceId: string;
  capability: GatedCapability;
  /** The agent principal the confirmation is for. */
  principal: string;
  /** The exact arguments the agent will send (or `target` + `operationDigest`). */
  arguments?: Json;
  target?: string;
  operationDigest?: string;
  /** 1 to 300 s (the service's maximum by default). */
  ttlSeconds?: number;
}

/** One page of a waiting list. */
export interface PageQuery {
  workspaceId: string;
  limit?: number;
  cursor?: string;
}

/** Calls the host routes under `baseUrl` (the tenant's API base, without `/mcp`); `token`
 * is a maintainer token or a function minting one (called once per request). */
export class HostClient {
  private readonly baseUrl: string;
  private readonly token: Mint;

  constructor(baseUrl: string, token: string | Mint, private readonly timeoutMs = 30_000) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.token = typeof token === 'string' ? () => token : token;
  }

  private async call(method: string, path: string, body?: Json,
    query?: Record<string, string | number | undefined>): Promise<Json> {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value !== undefined) {
        url.searchParams.set(name, String(value));
      }
    }
    const response = await fetch(url, {
      method,
      headers: { Authorization: `Bearer ${await this.token()}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const text = await response.text();
    const parsed: unknown = text ? JSON.parse(text) : {};
    const answer = (parsed !== null && typeof parsed === 'object' ? parsed : {}) as Json;
    if (!response.ok) {
      throw new HostRouteError(response.status, answer);
    }
    return answer;
  }

  private static segment(value: string): string {
    return encodeURIComponent(value);
  }

  /** Ask a human to confirm one gated call; answers `elicitationRef`, `state`, … */
  requestConfirmation(request: ConfirmationRequest): Promise<Json> {
    const body: Json = {
      workspace_id: request.workspaceId,
      capability: request.capability,
      principal: request.principal,
      ttl_seconds: request.ttlSeconds ?? 300,
    };
    if (request.arguments !== undefined) {
      body.arguments = request.arguments;
    } else {
      body.target = request.target ?? '';
      body.operation_digest = request.operationDigest;
    }
    return this.call('POST', '/host/confirmations', body);
  }

  /** Record the human's decision on confirmation `ref`. */
  decideConfirmation(ref: string, decision: { workspaceId: string;
    decision: 'approve' | 'reject'; approver: string }): Promise<Json> {
    return this.call('POST', `/host/confirmations/${HostClient.segment(ref)}/decision`, {
      workspace_id: decision.workspaceId, decision: decision.decision, approver: decision.approver,
    });
  }

  /** The state of confirmation `ref`. */
  confirmation(ref: string, where: { workspaceId: string }): Promise<Json> {
    return this.call('GET', `/host/confirmations/${HostClient.segment(ref)}`, undefined,
      { workspace_id: where.workspaceId });
  }

  /** One page (`items`, `nextCursor`) of confirmations waiting for a decision. */
  pendingConfirmations(query: PageQuery): Promise<Json> {
    return this.call('GET', '/host/confirmations', undefined, {
      workspace_id: query.workspaceId, state: 'pending', limit: query.limit, cursor: query.cursor,
    });
  }

  /** One page of candidates held for the host's adjudication (metadata only). */
  heldCandidates(query: PageQuery): Promise<Json> {
    return this.call('GET', '/host/adjudications', undefined, {
      workspace_id: query.workspaceId, limit: query.limit, cursor: query.cursor,
    });
  }

  /** A held candidate's payload, for the reviewer. */
  heldCandidate(candidateId: string, where: { workspaceId: string }): Promise<Json> {
    return this.call('GET', `/host/adjudications/${HostClient.segment(candidateId)}`, undefined,
      { workspace_id: where.workspaceId });
  }

  /** Accept or reject a held candidate; answers the admission outcome. */
  adjudicate(candidateId: string, decision: { workspaceId: string;
    decision: 'accept' | 'reject'; approver?: string }): Promise<Json> {
    const body: Json = { workspace_id: decision.workspaceId, decision: decision.decision };
    if (decision.approver !== undefined) {
      body.approver = decision.approver;
    }
    return this.call('POST', `/host/adjudications/${HostClient.segment(candidateId)}`, body);
  }

  /** One page of a workspace export (docs/backup.md): `part` records, tombstones or
   * journal; follow `next` as `page`. */
  exportPage(query: { workspaceId: string; part: 'records' | 'tombstones' | 'journal';
    at?: number; since?: number; limit?: number; page?: string }): Promise<Json> {
    return this.call('GET', '/host/export', undefined, {
      workspace_id: query.workspaceId, part: query.part, at: query.at, since: query.since,
      limit: query.limit, page: query.page,
    });
  }
}
