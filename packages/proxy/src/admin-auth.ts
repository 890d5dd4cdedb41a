// Who is calling the LB's admin API, from the bearer it presents:
// - the console: one of the LB tokens this LB holds (lb-credentials.ts);
// - a peer LB: the read-only peer credential of an LB in this config's peers (its SHA-256 is in
//   `peers[].credentialHashes`); it may read GET /admin/peer and forward requests, nothing else;
// - nobody. Every comparison is on SHA-256 digests with timingSafeEqual, over every candidate, with no
//   early exit, so the answer's timing says nothing about how close a guess was.
import type { LbConfig } from "@meridian/protocol";
import { bearerOf, digestsEqual, sha256 } from "@meridian/protocol/credentials";
import { HttpError } from "./errors";
import type { DigestCompare, LbCredentials } from "./lb-credentials";

export type Caller = { kind: "console" } | { kind: "peer"; peerId: string } | { kind: "none"; reason: "missing" | "invalid" };

/** The answer to a bearer this LB does not trust (the admin API's and GET /metrics'). */
export const unauthorized = (): HttpError =>
  new HttpError(401, "missing or invalid bearer token", "authentication_error", "invalid_token", null, { "www-authenticate": "Bearer" });

interface PeerVerifier {
  peerId: string;
  digest: Buffer;
}

// Built once per config object (configs are immutable once applied).
const verifiersByConfig = new WeakMap<LbConfig, PeerVerifier[]>();

function peerVerifiers(config: LbConfig): PeerVerifier[] {
  let verifiers = verifiersByConfig.get(config);
  if (!verifiers) {
    verifiers = config.peers.flatMap((peer) => peer.credentialHashes.map((hash) => ({ peerId: peer.id, digest: Buffer.from(hash, "hex") })));
    verifiersByConfig.set(config, verifiers);
  }
  return verifiers;
}

/** The peer whose credential has this digest, or null (compares against every verifier). */
export function peerWithCredential(digest: Buffer, config: LbConfig, compare: DigestCompare = digestsEqual): string | null {
  let found: string | null = null;
  for (const verifier of peerVerifiers(config)) {
    if (compare(digest, verifier.digest) && found === null) found = verifier.peerId;
  }
  return found;
}

/** The caller an `Authorization` header names. */
export function identifyCaller(authorization: string | undefined, credentials: LbCredentials, config: LbConfig, compare: DigestCompare = digestsEqual): Caller {
  const bearer = bearerOf(authorization);
  if (bearer === null) return { kind: "none", reason: "missing" };
  const digest = sha256(bearer);
  const isConsole = credentials.isAdmin(digest, compare);
  const peerId = peerWithCredential(digest, config, compare);
  if (isConsole) return { kind: "console" };
  if (peerId !== null) return { kind: "peer", peerId };
  return { kind: "none", reason: "invalid" };
}
