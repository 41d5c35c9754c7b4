// Claim validation: every rule of docs/mcp.md's claim table that a host can break is refused
// by the kit before signing, with the rule named (the same names as the Python kit).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { decodeJwt, decodeProtectedHeader, importJWK, jwtVerify } from 'jose';

import {
  ClaimRuleError, HostKey, HostKeyRing, checkAgentClaims, checkMaintainerClaims, mintAgentToken,
  mintMaintainerToken, signClaims,
} from '../dist/index.js';

const key = HostKey.generate();
const deployment = { issuer: 'urn:test:host', audience: 'urn:test:aud', tenant: 't1' };
const agent = {
  ...deployment, workspace: 'ws1', purposeRef: 'purpose:test', capabilities: ['search', 'capture'],
  principal: 'user-1', agentId: 'agent-1',
};
const maintainer = { ...deployment, subject: 'reviewer', tenantWide: true };

async function refusedWith(rule, promise) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof ClaimRuleError, String(error));
    assert.equal(error.rule, rule);
    return true;
  });
}

// [rule, the agent options that break it]
const AGENT_VIOLATIONS = [
  ['lifetime', { ttlSeconds: 301 }],
  ['lifetime', { ttlSeconds: 0 }],
  ['lifetime', { ttlSeconds: 1.5 }],
  ['ref', { issuer: '' }],
  ['ref', { audience: '' }],
  ['ref', { agentId: 'a'.repeat(513) }],
  ['ref', { session: 'e\u0301' }], // not NFC
  ['ref', { purposeRef: '' }],
  ['ref', { auditId: 'x'.repeat(600) }],
  ['ref', { confirmationRef: '' }],
  ['ref', { principal: '' }],
  ['no-hash', { tenant: 't#1' }],
  ['no-hash', { workspace: 'ws#1' }],
  ['internal-principal', { principal: 'host:adjudication' }],
  ['internal-principal', { principal: 'system:expiry-sweeper' }],
  ['capabilities', { capabilities: ['search', 'delete_everything'] }],
  ['capabilities', { capabilities: 'search' }],
  ['capabilities', { confirmRequired: ['nope'] }],
  ['deadline', { deadlineMs: -1 }],
  ['deadline', { deadlineMs: 1_790_000_000 }], // seconds, not milliseconds
];

for (const [rule, change] of AGENT_VIOLATIONS) {
  test(`an agent token with ${JSON.stringify(change).slice(0, 60)} is refused: ${rule}`, async () => {
    await refusedWith(rule, mintAgentToken(key, { ...agent, ...change }));
  });
}

const MAINTAINER_VIOLATIONS = [
  ['maintainer-scope', { tenantWide: undefined }],
  ['maintainer-scope', { workspaces: ['ws1'] }], // both
  ['maintainer-scope', { tenantWide: false, workspaces: [] }],
  ['maintainer-scope', { tenantWide: false, workspaces: Array.from({ length: 65 }, (_, i) => `w${i}`) }],
  ['no-hash', { tenantWide: false, workspaces: ['ws#1'] }],
  ['ref', { subject: '' }],
  ['lifetime', { ttlSeconds: 1000 }],
  ['no-hash', { tenant: 'a#b' }],
];

for (const [rule, change] of MAINTAINER_VIOLATIONS) {
  test(`a maintainer token with ${JSON.stringify(change).slice(0, 60)} is refused: ${rule}`, async () => {
    await refusedWith(rule, mintMaintainerToken(key, { ...maintainer, ...change }));
  });
}

test('an agent token carries every claim the service requires, signed under its kid', async () => {
  const token = await mintAgentToken(key, { ...agent, confirmationRef: 'conf_1', nowMs: 1_790_000_000_000 });
  const header = decodeProtectedHeader(token);
  assert.deepEqual(header, { alg: 'EdDSA', kid: key.kid });
  const claims = decodeJwt(token);
  assert.equal(claims.exp - claims.iat, 300);
  assert.equal(claims.nbf, claims.iat);
  assert.equal(claims.deadline, claims.exp * 1000);
  assert.equal(claims.sub, 'user-1');
  assert.equal(claims.principal, 'user-1');
  assert.equal(claims.purpose_ref, 'purpose:test');
  assert.deepEqual(claims.capabilities, ['search', 'capture']);
  assert.deepEqual(claims.confirm_required, []);
  assert.equal(claims.confirmation_ref, 'conf_1');
  assert.ok(claims.jti && claims.session && claims.audit_id);
  assert.equal(claims.perm, undefined);
  const verified = await jwtVerify(token, await importJWK(key.publicJwk(), 'EdDSA'),
    { currentDate: new Date(1_790_000_000_000) });
  assert.equal(verified.payload.tenant, 't1');
});

test('a maintainer token holds read+maintain and exactly one scope claim', async () => {
  const wide = decodeJwt(await mintMaintainerToken(key, maintainer));
  assert.deepEqual(wide.perm, ['read', 'maintain']);
  assert.equal(wide.tenant_wide, true);
  assert.equal(wide.workspaces, undefined);
  const scoped = decodeJwt(await mintMaintainerToken(key, { ...deployment, subject: 'r', workspaces: ['ws1'] }));
  assert.deepEqual(scoped.workspaces, ['ws1']);
  assert.equal(scoped.tenant_wide, undefined);
});

test('a P-256 key signs ES256 and its JWK is an EC P-256 entry', async () => {
  const ec = HostKey.generate('P-256');
  const jwk = ec.publicJwk();
  assert.equal(jwk.kty, 'EC');
  assert.equal(jwk.crv, 'P-256');
  assert.equal(jwk.alg, 'ES256');
  assert.equal(jwk.d, undefined);
  const token = await mintAgentToken(ec, agent);
  assert.equal(decodeProtectedHeader(token).alg, 'ES256');
  await jwtVerify(token, await importJWK(jwk, 'ES256'));
});

test('a PEM round trip keeps the key and its stable kid', () => {
  const again = HostKey.fromPem(key.privatePem());
  assert.equal(again.kid, key.kid);
  assert.match(key.kid, /^host-[0-9a-f]{16}$/);
  assert.deepEqual(again.publicJwk(), key.publicJwk());
  assert.equal(key.publicJwk().d, undefined);
});

test('an RSA key is not a host key', async () => {
  const { generateKeyPairSync } = await import('node:crypto');
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  assert.throws(() => new HostKey(privateKey), TypeError);
});

test('a key ring rotates: add, sign with the new key, retire the old one', () => {
  const old = HostKey.generate();
  const next = HostKey.generate('P-256');
  const ring = new HostKeyRing([old]);
  ring.add(next);
  assert.deepEqual(ring.jwks().keys.map((k) => k.kid), [old.kid, next.kid]);
  assert.equal(ring.signing.kid, old.kid);
  assert.throws(() => ring.retire(old.kid));
  ring.signWith(next.kid);
  ring.retire(old.kid);
  assert.deepEqual(JSON.parse(ring.jwksJson()).keys.map((k) => k.kid), [next.kid]);
});

// A raw claim set, as signed: the same checks and rule names as the Python kit's
// check_agent_claims / check_maintainer_claims (the e2e test runs its whole matrix here).
const NOW_S = 1_790_000_000;
const agentClaims = {
  iss: 'urn:host', aud: 'urn:engram', sub: 'user-1', jti: 'a'.repeat(32), iat: NOW_S, nbf: NOW_S,
  exp: NOW_S + 120, tenant: 't1', workspace: 'ws1', principal: 'user-1', agent_id: 'agent-1',
  session: 'sess-1', purpose_ref: 'purpose:p', audit_id: 'audit-1', deadline: (NOW_S + 120) * 1000,
  capabilities: ['search'], confirm_required: [],
};
const maintainerClaims = {
  iss: 'urn:host', aud: 'urn:engram', sub: 'reviewer', jti: 'b'.repeat(32), iat: NOW_S, nbf: NOW_S,
  exp: NOW_S + 120, tenant: 't1', perm: ['read', 'maintain'], tenant_wide: true,
};
function without(claims, name) {
  const { [name]: _, ...rest } = claims;
  return rest;
}
function checkedAs(check, claims) {
  try {
    check(claims);
    return 'passed';
  } catch (error) {
    assert.ok(error instanceof ClaimRuleError, String(error));
    return error.rule;
  }
}

test('a well-formed agent and maintainer claim set pass the raw checks', () => {
  assert.equal(checkedAs(checkAgentClaims, agentClaims), 'passed');
  assert.equal(checkedAs(checkAgentClaims, { ...agentClaims, perm: 'read' }), 'passed');
  assert.equal(checkedAs(checkAgentClaims, without(agentClaims, 'confirm_required')), 'passed');
  assert.equal(checkedAs(checkMaintainerClaims, maintainerClaims), 'passed');
  assert.equal(checkedAs(checkMaintainerClaims, { ...maintainerClaims, perm: 'read maintain' }), 'passed');
  assert.equal(checkedAs(checkMaintainerClaims,
    { ...without(maintainerClaims, 'tenant_wide'), workspaces: ['ws1'] }), 'passed');
});

// [rule, agent claims that break it]
const RAW_AGENT_VIOLATIONS = [
  ['times', without(agentClaims, 'nbf')],
  ['times', { ...agentClaims, exp: NOW_S + 60.5 }],
  ['times', { ...agentClaims, iat: String(NOW_S) }],
  ['lifetime', { ...agentClaims, exp: NOW_S + 301 }],
  ['lifetime', { ...agentClaims, exp: NOW_S }],
  ['jti', without(agentClaims, 'jti')],
  ['jti', { ...agentClaims, jti: '' }],
  ['ref', { ...agentClaims, jti: 'j'.repeat(513) }],
  ['no-hash', { ...agentClaims, tenant: 't#1' }],
  ['ref', without(agentClaims, 'audit_id')],
  ['internal-principal', { ...agentClaims, principal: 'system:expiry-sweeper' }],
  ['agent-perm', { ...agentClaims, perm: ['read', 'maintain'] }],
  ['agent-perm', { ...agentClaims, perm: 'read maintain' }],
  ['agent-perm', { ...agentClaims, perm: [1] }],
  ['deadline', { ...agentClaims, deadline: 'soon' }],
  ['capabilities', { ...agentClaims, confirm_required: null }],
  ['ref', { ...agentClaims, confirmation_ref: '' }],
];

for (const [rule, claims] of RAW_AGENT_VIOLATIONS) {
  test(`checkAgentClaims names ${rule} for ${JSON.stringify(claims).slice(-60)}`, () => {
    assert.equal(checkedAs(checkAgentClaims, claims), rule);
  });
}

const RAW_MAINTAINER_VIOLATIONS = [
  ['times', { ...maintainerClaims, iat: null }],
  ['jti', without(maintainerClaims, 'jti')],
  ['maintainer-perm', { ...maintainerClaims, perm: ['read'] }],
  ['maintainer-perm', without(maintainerClaims, 'perm')],
  ['maintainer-perm', { ...maintainerClaims, perm: { read: true } }],
  ['maintainer-scope', { ...maintainerClaims, tenant_wide: 'true' }],
  ['maintainer-scope', { ...maintainerClaims, tenant_wide: false }],
  ['maintainer-scope', { ...without(maintainerClaims, 'tenant_wide'), workspaces: 'ws1' }],
  ['no-hash', { ...without(maintainerClaims, 'tenant_wide'),
    workspaces: [...Array.from({ length: 64 }, (_, i) => `w${i}`), 'a#b'] }],
  ['ref', { ...maintainerClaims, sub: '' }],
];

for (const [rule, claims] of RAW_MAINTAINER_VIOLATIONS) {
  test(`checkMaintainerClaims names ${rule} for ${JSON.stringify(claims).slice(-60)}`, () => {
    assert.equal(checkedAs(checkMaintainerClaims, claims), rule);
  });
}

test('signClaims signs a claim set as it is, with no rule checked', async () => {
  const forged = { ...agentClaims, perm: ['maintain'], exp: NOW_S + 9999 };
  const token = await signClaims(key, forged);
  assert.deepEqual(decodeProtectedHeader(token), { alg: 'EdDSA', kid: key.kid });
  assert.deepEqual(decodeJwt(token), forged);
  await jwtVerify(token, await importJWK(key.publicJwk(), 'EdDSA'), { currentDate: new Date(NOW_S * 1000) });
});

test('every minted token passes the raw check of its kind', async () => {
  checkAgentClaims(decodeJwt(await mintAgentToken(key, { ...agent, confirmationRef: 'conf_1' })));
  checkMaintainerClaims(decodeJwt(await mintMaintainerToken(key, maintainer)));
  assert.equal(checkedAs(checkAgentClaims, decodeJwt(await mintMaintainerToken(key, maintainer))), 'ref');
});
