/** An MCP transport for the official SDK client whose bearer token never goes stale. */

import { decodeJwt } from 'jose';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** Mint again when the current token expires within this many seconds. */
export const DEFAULT_REFRESH_MARGIN_S = 30;

/** Returns a fresh token (e.g. `() => mintAgentToken(key, {...})`). */
export type Mint = () => string | Promise<string>;

/** The current bearer from `mint`, minted again when it is within `marginSeconds` of
 * its `exp` (tokens live at most 300 s; an agent session may be longer). */
export class RefreshingBearer {
  private token = '';
  private expiresAtS = 0;
  private pending: Promise<string> | undefined;

  constructor(
    private readonly mint: Mint,
    private readonly marginSeconds: number = DEFAULT_REFRESH_MARGIN_S,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** The current token, minting a new one when it nears expiry. */
  async current(): Promise<string> {
    if (this.token && this.nowMs() / 1000 < this.expiresAtS - this.marginSeconds) {
      return this.token;
    }
    // Concurrent requests share one mint.
    this.pending ??= (async () => {
      try {
        const token = await this.mint();
        const exp = decodeJwt(token).exp;
        this.expiresAtS = typeof exp === 'number' ? exp : 0;
        this.token = token;
        return token;
      } finally {
        this.pending = undefined;
      }
    })();
    return this.pending;
  }
}

/** Options of `createMemoryTransport`. */
export interface MemoryTransportOptions {
  marginSeconds?: number;
  /** The fetch to wrap (default: the global one). */
  fetch?: typeof fetch;
}

/**
 * A `StreamableHTTPClientTransport` on `url` (the tenant's `/mcp` endpoint) whose every
 * HTTP request carries `Authorization: Bearer` with a token from `mint` that is not about
 * to expire. Pass it to `new Client(...).connect(transport)`.
 */
export function createMemoryTransport(
  url: string | URL,
  mint: Mint,
  options: MemoryTransportOptions = {},
): StreamableHTTPClientTransport {
  const bearer = new RefreshingBearer(mint, options.marginSeconds ?? DEFAULT_REFRESH_MARGIN_S);
  const base = options.fetch ?? fetch;
  const authorized = async (input: string | URL, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    headers.set('Authorization', `Bearer ${await bearer.current()}`);
    return base(input, { ...init, headers });
  };
  return new StreamableHTTPClientTransport(new URL(url), { fetch: authorized });
}
