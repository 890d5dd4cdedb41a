// The console's challenge to an LB (docs/ARCHITECTURE.md, "LB credentials"): GET /admin/proof with a
// fresh 256-bit nonce and no credential; the LB answers an HMAC of (schema, its id, the nonce) per
// token it holds. The LB has proved itself when the answer names the LB the console expects and one
// MAC verifies under the console's token for it. Nothing secret is sent, so a listener that is not
// that LB learns nothing, and a replayed or relayed answer fails on the nonce or the LB id.
import "server-only";
import type { Dispatcher } from "undici";
import { safeParseLbProof } from "@meridian/protocol";
import { newNonce, verifyProof } from "@meridian/protocol/credentials";
import { getText } from "./admin-get";

export type ChallengeResult = { ok: true; keyId: string; held: string[] } | { ok: false; error: string; held: string[]; answered: boolean };

export async function challengeLb(
  dispatcher: Dispatcher,
  endpoint: { id: string; adminBase: string },
  token: { token: string; keyId: string },
  timeoutMs: number,
): Promise<ChallengeResult> {
  const nonce = newNonce();
  let status: number;
  let text: string;
  try {
    ({ status, text } = await getText(`${endpoint.adminBase.replace(/\/+$/, "")}/admin/proof?nonce=${nonce}`, { dispatcher, timeoutMs }));
  } catch (error) {
    return { ok: false, error: `challenge failed: ${error instanceof Error ? error.message : String(error)}`, held: [], answered: false };
  }
  if (status !== 200) return { ok: false, error: `GET /admin/proof answered ${status}: not a Meridian LB`, held: [], answered: true };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false, error: "GET /admin/proof answered something that is not JSON: not a Meridian LB", held: [], answered: true };
  }
  const parsed = safeParseLbProof(body);
  if (!parsed.success) return { ok: false, error: `GET /admin/proof answered no proof (${parsed.error.message}): not a Meridian LB`, held: [], answered: true };
  const proof = parsed.data;
  const held = proof.proofs.map((p) => p.keyId);
  if (proof.lbId !== endpoint.id) {
    return { ok: false, error: `the LB at ${endpoint.adminBase} is "${proof.lbId}", not "${endpoint.id}"`, held, answered: true };
  }
  if (proof.nonce !== nonce) return { ok: false, error: "the LB answered another challenge", held, answered: true };
  const mine = proof.proofs.find((p) => p.keyId === token.keyId);
  if (!mine) {
    const holds = held.length > 0 ? `it holds ${held.join(", ")}` : "it holds no token";
    return { ok: false, error: `the LB does not hold token ${token.keyId} (${holds}); issue a new token and configure the LB with it`, held, answered: true };
  }
  if (!verifyProof(token.token, endpoint.id, nonce, mine.mac)) {
    return { ok: false, error: `the LB's proof for token ${token.keyId} is wrong`, held, answered: true };
  }
  return { ok: true, keyId: token.keyId, held };
}
