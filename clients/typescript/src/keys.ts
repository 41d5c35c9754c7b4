/** Host signing keys (Ed25519 or P-256), their public JWK and the key set a tenant trusts. */

import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto';

/** The two key types the service accepts. */
export type KeyType = 'Ed25519' | 'P-256';
/** The one algorithm each key type signs with (the service accepts no other). */
export type Algorithm = 'EdDSA' | 'ES256';
/** Most keys a tenant trusts at once (a rotation needs two). */
export const MAX_HOST_KEYS = 8;

/** A public JWK as the tenant config's `host.keys` (and `ENGRAM_HOST_JWKS`) holds it. */
export interface PublicJwk extends JsonWebKey {
  kid: string;
  alg: Algorithm;
  use: 'sig';
}

/** `{ keys: [...] }`: a JSON Web Key Set. */
export interface Jwks {
  keys: PublicJwk[];
}

function algorithmOf(key: KeyObject): Algorithm {
  if (key.asymmetricKeyType === 'ed25519') {
    return 'EdDSA';
  }
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') {
    return 'ES256';
  }
  throw new TypeError('a host key must be an Ed25519 or EC P-256 private key');
}

/** `host-` + 16 hex digits of the SHA-256 of the public key's SPKI DER (stable; the
 * Python kit and the local service derive the same id). */
export function defaultKid(privateKey: KeyObject): string {
  const der = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  return 'host-' + createHash('sha256').update(der).digest('hex').slice(0, 16);
}

/** A host's private signing key and the `kid` the tenant knows it by. */
export class HostKey {
  /** The private key (a Node `KeyObject`; keep it secret). */
  readonly privateKey: KeyObject;
  /** The key id the tenant's key set lists it under; every token's header names it. */
  readonly kid: string;
  /** `EdDSA` (Ed25519) or `ES256` (P-256). */
  readonly algorithm: Algorithm;

  constructor(privateKey: KeyObject, kid?: string) {
    if (privateKey.type !== 'private') {
      throw new TypeError('a host key must be a private key');
    }
    this.algorithm = algorithmOf(privateKey);
    this.privateKey = privateKey;
    this.kid = kid ?? defaultKid(privateKey);
    if (!this.kid) {
      throw new TypeError('a host key needs a kid');
    }
  }

  /** A fresh key of `kind` (Ed25519 by default). */
  static generate(kind: KeyType = 'Ed25519', kid?: string): HostKey {
    const pair = kind === 'Ed25519'
      ? generateKeyPairSync('ed25519')
      : generateKeyPairSync('ec', { namedCurve: 'P-256' });
    return new HostKey(pair.privateKey, kid);
  }

  /** An unencrypted PKCS#8 (or SEC1) PEM private key, e.g. the local service's
   * `host_key.pem`. */
  static fromPem(pem: string | Buffer, kid?: string): HostKey {
    return new HostKey(createPrivateKey({ key: pem, format: 'pem' }), kid);
  }

  /** Unencrypted PKCS#8 PEM (store it with file mode 0600). */
  privatePem(): string {
    return this.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  }

  /** SubjectPublicKeyInfo PEM of the public half. */
  publicPem(): string {
    return createPublicKey(this.privateKey).export({ type: 'spki', format: 'pem' }).toString();
  }

  /** The public JWK with `kid`, `alg` and `use`: one entry of the tenant config's
   * `host.keys` (and of `ENGRAM_HOST_JWKS`). */
  publicJwk(): PublicJwk {
    const jwk = createPublicKey(this.privateKey).export({ format: 'jwk' });
    return { ...jwk, kid: this.kid, alg: this.algorithm, use: 'sig' };
  }
}

/**
 * The keys a tenant trusts and the one that signs; rotation in three calls:
 * `add(next)` then publish `jwks()` to the tenant; `signWith(next.kid)` once the tenant
 * trusts it; `retire(old.kid)` once no token of the old key is still live (≤ 300 s).
 */
export class HostKeyRing {
  private keys: HostKey[] = [];
  private signingKid = '';

  constructor(keys: Iterable<HostKey> = []) {
    for (const key of keys) {
      this.add(key);
    }
  }

  /** The key tokens are signed with now. */
  get signing(): HostKey {
    const key = this.keys.find((k) => k.kid === this.signingKid);
    if (key === undefined) {
      throw new Error('the key ring is empty');
    }
    return key;
  }

  /** The trusted keys, signing key included. */
  get trusted(): readonly HostKey[] {
    return [...this.keys];
  }

  /** Trust `key` too (it does not sign yet, unless it is the first). */
  add(key: HostKey): void {
    if (this.keys.some((k) => k.kid === key.kid)) {
      throw new Error('kid already in the key ring');
    }
    if (this.keys.length >= MAX_HOST_KEYS) {
      throw new Error(`a tenant trusts at most ${MAX_HOST_KEYS} host keys`);
    }
    this.keys.push(key);
    if (!this.signingKid) {
      this.signingKid = key.kid;
    }
  }

  /** Sign from now on with the key `kid` (already added and published). */
  signWith(kid: string): void {
    if (!this.keys.some((k) => k.kid === kid)) {
      throw new Error('no such kid in the key ring');
    }
    this.signingKid = kid;
  }

  /** Stop trusting `kid` (never the signing key). */
  retire(kid: string): void {
    if (kid === this.signingKid) {
      throw new Error('the signing key cannot be retired; signWith another first');
    }
    this.keys = this.keys.filter((k) => k.kid !== kid);
  }

  /** `{ keys: [...] }`: what the tenant config's `host.keys` holds. */
  jwks(): Jwks {
    return { keys: this.keys.map((k) => k.publicJwk()) };
  }

  /** `jwks()` as compact JSON (`ENGRAM_HOST_JWKS`). */
  jwksJson(): string {
    return JSON.stringify(this.jwks());
  }
}
