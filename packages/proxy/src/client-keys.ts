// The check at the entrance of the inference routes: which client API key a request carries
// (config.clientAuth, hashes only), or which peer LB forwarded it. With `required`, a request with
// neither gets 401 in OpenAI's shape before anything else is read. A Meridian credential (a client
// key, a peer credential) is consumed here and never passed on to an engine; any other
// Authorization header goes through as before, when keys are not required.
//
// Constant time: the key's public id (`mk_<id>_<secret>`) picks the entry, and SHA-256 of the whole
// presented key is compared with the entry's digest by timingSafeEqual; an unknown id is compared
// against a dummy digest, so a guess costs the same whether or not its id exists.
import type { ClientKeyEntry, LbConfig } from "@meridian/protocol";
import { bearerOf, CLIENT_KEY_PREFIX, clientKeyIdOf, digestsEqual, LB_TOKEN_PREFIX, PEER_CREDENTIAL_PREFIX, sha256 } from "@meridian/protocol/credentials";
import { peerWithCredential } from "./admin-auth";
import { HttpError } from "./errors";

import type { DigestCompare } from "./lb-credentials";

/** Credentials of Meridian's own shapes: client keys, LB tokens, peer credentials. */
const MERIDIAN_CREDENTIAL_PREFIXES = [CLIENT_KEY_PREFIX, LB_TOKEN_PREFIX, PEER_CREDENTIAL_PREFIX];

/** A whole credential of one of Meridian's shapes (packages/protocol/src/credentials.ts: a prefix, a
 * client key's 12-hex id, 43 base64url characters), ending where its characters end. Found anywhere,
 * also glued to a scheme (`Bearermlt_…`) or after a dot. The full length makes a chance match inside
 * an engine's own random token (a JWE's or PASETO's segment) about 1 in 16 million. */
const WHOLE_CREDENTIAL = new RegExp(`(?:${LB_TOKEN_PREFIX}|${PEER_CREDENTIAL_PREFIX}|${CLIENT_KEY_PREFIX}[0-9a-f]{12}_)[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])`);

/** Whether `text` holds a Meridian credential: a whole one anywhere, or a word that starts with one
 * of the prefixes (a key with a typo too). Words are runs of base64url and dots; anything else
 * separates them (spaces, quotes of any kind, brackets, `+`, `/`, `=`, `:`). A JWT, JWE or PASETO
 * token is one word, so a random segment of it that starts like a prefix is no credential. */
function meridianShaped(text: string): boolean {
  if (WHOLE_CREDENTIAL.test(text)) return true;
  return text.split(/[^A-Za-z0-9_.-]+/).some((word) => MERIDIAN_CREDENTIAL_PREFIXES.some((prefix) => word.startsWith(prefix)));
}

/**
 * Whether an Authorization value holds a credential of Meridian's shapes in any form: as a bearer,
 * alone, under another scheme (`Token mlt_…`), beside a stray word or punctuation, after `Bearer:`,
 * glued to a scheme, or as a Basic user or password (base64, which the engine can decode) wherever
 * Basic stands in the value, however it is written after (`Basic:`, `Basic=`, quoted). Only an exact
 * `Bearer <token>` is parsed as a key, and every other value went to the engine as it came, an LB
 * token with it.
 */
function holdsMeridianCredential(authorization: string): boolean {
  if (meridianShaped(authorization)) return true;
  for (const [, encoded] of authorization.matchAll(/Basic[^A-Za-z0-9+/]*([A-Za-z0-9+/=_-]+)/gi)) {
    if (meridianShaped(Buffer.from(encoded as string, "base64").toString("latin1"))) return true;
  }
  return false;
}

/** The Authorization header an engine may see: none when it holds anything of Meridian's. */
const passedOn = (authorization: string | undefined) => (authorization === undefined || holdsMeridianCredential(authorization) ? null : authorization);

/** Who a request is counted for in the per-key metrics: a key, a peer LB, or nobody. */
export interface ClientIdentity {
  keyId: string;
  keyName: string;
}

const ANONYMOUS: ClientIdentity = Object.freeze({ keyId: "anonymous", keyName: "" });
/** The key id a peer LB's forwards are counted under (its id is the key name). */
const PEER_IDENTITY = "peer";

/** Whether the request's client presented one of the fleet's client keys (not anonymous, not a peer
 * LB vouching for its own client). */
export function presentedClientKey(identity: ClientIdentity): boolean {
  return identity.keyId !== ANONYMOUS.keyId && identity.keyId !== PEER_IDENTITY;
}

/** Whether a peer LB forwarded the request: its peer credential, on a request marked as forwarded
 * (x-meridian-hop), identified it (checkClient). */
export function forwardedByPeer(identity: ClientIdentity): boolean {
  return identity.keyId === PEER_IDENTITY;
}

export type ClientCheck =
  | { ok: true; identity: ClientIdentity; forwardAuthorization: string | null }
  | { ok: false; reason: "missing" | "invalid"; error: HttpError; keyId: string | null };

interface KeyVerifier {
  entry: ClientKeyEntry;
  digest: Buffer;
}

const keyringByConfig = new WeakMap<LbConfig, Map<string, KeyVerifier>>();
const DUMMY_DIGEST = sha256("meridian: no such client key");

function keyring(config: LbConfig): Map<string, KeyVerifier> {
  let ring = keyringByConfig.get(config);
  if (!ring) {
    ring = new Map(config.clientAuth.keys.map((entry) => [entry.id, { entry, digest: Buffer.from(entry.sha256, "hex") }]));
    keyringByConfig.set(config, ring);
  }
  return ring;
}

// OpenAI's own 401 bodies: type invalid_request_error, code invalid_api_key; the SDKs raise
// AuthenticationError on the status.
const MISSING =
  "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).";
const INVALID = "Incorrect API key provided. Ask the operator of this Meridian fleet for a key.";
const refusal = (message: string) =>
  new HttpError(401, message, "invalid_request_error", "invalid_api_key", null, { "www-authenticate": 'Bearer realm="meridian"' });

const KEYLESS_FORWARD_REFUSED = new HttpError(
  503,
  "this region requires client API keys, and the forwarding LB's client presented none: try another target",
  "server_error",
  "client_key_required_here",
);

/**
 * `forwardedKeyed`: on a request a peer LB forwarded, that LB says its client presented a valid key
 * (x-meridian-client-keyed). Where keys are required, a peer's forward is admitted only then: a
 * region without the rule could otherwise forward keyless clients onto this region's replicas.
 */
export function checkClient(
  authorization: string | undefined,
  hop: number,
  config: LbConfig,
  compare: DigestCompare = digestsEqual,
  forwardedKeyed = false,
): ClientCheck {
  const { required } = config.clientAuth;
  const bearer = bearerOf(authorization);
  if (bearer === null) {
    if (required) return { ok: false, reason: "missing", error: refusal(MISSING), keyId: null };
    return { ok: true, identity: ANONYMOUS, forwardAuthorization: passedOn(authorization) };
  }
  const digest = sha256(bearer);
  const keyId = clientKeyIdOf(bearer);
  if (keyId !== null) {
    const verifier = keyring(config).get(keyId);
    const matches = compare(digest, verifier?.digest ?? DUMMY_DIGEST) && verifier !== undefined;
    if (matches) return { ok: true, identity: { keyId, keyName: verifier.entry.name }, forwardAuthorization: null };
    if (required) return { ok: false, reason: "invalid", error: refusal(INVALID), keyId };
    return { ok: true, identity: ANONYMOUS, forwardAuthorization: null };
  }
  const peerId = peerWithCredential(digest, config, compare);
  if (peerId !== null && hop >= 1) {
    // A 503, not a 401: the forwarding LB moves a request on a 503 (to another target, or its own
    // replicas), where a 401 would reach a client that needed no key in its own region. It forwarded on
    // a report from before this LB required keys, or is older than the x-meridian-client-keyed header.
    if (required && !forwardedKeyed) return { ok: false, reason: "missing", error: KEYLESS_FORWARD_REFUSED, keyId: null };
    return { ok: true, identity: { keyId: PEER_IDENTITY, keyName: peerId }, forwardAuthorization: null };
  }
  if (required) return { ok: false, reason: "invalid", error: refusal(INVALID), keyId: null };
  // Not ours: an engine's own key, passed through as before keys existed. Anything shaped like a
  // Meridian credential (a client key with a typo, an LB token, a peer credential) is never passed
  // on: an LB token sent here by mistake reached the engine verbatim, and it opens the LB's admin API.
  return { ok: true, identity: ANONYMOUS, forwardAuthorization: passedOn(authorization) };
}
