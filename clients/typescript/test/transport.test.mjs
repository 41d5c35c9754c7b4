import assert from 'node:assert/strict';
import { test } from 'node:test';

import { HostKey, RefreshingBearer, mintAgentToken } from '../dist/index.js';

const key = HostKey.generate();
const options = {
  issuer: 'i', audience: 'a', tenant: 't', workspace: 'w', purposeRef: 'p',
  capabilities: ['search'], principal: 'u', agentId: 'g', ttlSeconds: 60,
};

test('the bearer is reused until it nears expiry, then minted afresh', async () => {
  let now = 1_790_000_000_000;
  let minted = 0;
  const bearer = new RefreshingBearer(() => { minted += 1; return mintAgentToken(key, { ...options, nowMs: now }); },
    10, () => now);
  const first = await bearer.current();
  now += 49_000;
  assert.equal(await bearer.current(), first);
  assert.equal(minted, 1);
  now += 2_000; // 9 s before exp: inside the margin
  assert.notEqual(await bearer.current(), first);
  assert.equal(minted, 2);
});

test('concurrent requests share one mint', async () => {
  let minted = 0;
  const bearer = new RefreshingBearer(() => { minted += 1; return mintAgentToken(key, options); });
  const tokens = await Promise.all([bearer.current(), bearer.current(), bearer.current()]);
  assert.equal(new Set(tokens).size, 1);
  assert.equal(minted, 1);
});
