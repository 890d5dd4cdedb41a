// LB tokens (docs/ARCHITECTURE.md, "LB credentials"): issuing one (shown once; the operator
// configures the LB with it), rotating it (the console installs the next token on the LB itself and
// retires the old one after a grace period: CredentialKeeper), and what the LBs page shows. Only key
// ids (public fingerprints) reach the audit log and the UI, never a token after it was shown once.
import "server-only";
import { eq } from "drizzle-orm";
import type { LoadBalancerRow, Queryable } from "@meridian/db";
import { type Actor, recordAudit } from "../audit-trail";
import { notFound, precondition } from "../errors";
import { insertToken, lbTokenRows } from "../runtime/lb-token-rows";
import { afterCommit } from "./after-commit";
import type { ServiceRuntime } from "./context";

export interface LbCredentialView {
  /** The token the console presents (its key id), null before one was issued. */
  keyId: string | null;
  /** A rotation's next token, not yet installed on the LB. */
  pendingKeyId: string | null;
  /** The previous token, accepted by the LB until `retireAt`. */
  retiringKeyId: string | null;
  retireAt: number | null;
  /** The LB proved it holds the current token at its admin URL in its last challenge. */
  proven: boolean;
  /** When it first proved itself at this admin URL (it is a peer of the other LBs since). */
  provenSince: number | null;
  /** Why the last challenge failed, or the last rotation step. */
  error: string | null;
  /** Key ids the LB said it holds. */
  heldByLb: string[];
}

export async function lbCredentialView(rt: ServiceRuntime, lb: Pick<LoadBalancerRow, "id" | "url" | "adminUrl">): Promise<LbCredentialView> {
  const { db, tables } = rt.store;
  const rows = await lbTokenRows(rt.store, lb.id);
  const byState = (state: string) => rows.find((row) => row.state === state) ?? null;
  const current = byState("current");
  const retiring = byState("retiring");
  const proof = await rt.lbProofs.get(lb.id);
  const adminBase = lb.adminUrl ?? lb.url;
  const [stored] = await db.select().from(tables.lbProofs).where(eq(tables.lbProofs.lbId, lb.id)).limit(1);
  const proven = current !== null && proof?.provenKeyId === current.keyId && proof.adminBase === adminBase;
  return {
    keyId: current?.keyId ?? null,
    pendingKeyId: byState("pending")?.keyId ?? null,
    retiringKeyId: retiring?.keyId ?? null,
    retireAt: retiring?.retireAt ?? null,
    proven,
    provenSince: stored?.adminBase === adminBase ? stored.provenAt : null,
    error: (proven ? null : (proof?.error ?? null)) ?? (await rt.credentials.rotationStatus(lb.id)).lastError,
    heldByLb: proof?.held ?? [],
  };
}

async function requireLb({ db, tables }: Queryable, id: string): Promise<LoadBalancerRow> {
  const [lb] = await db.select().from(tables.loadBalancers).where(eq(tables.loadBalancers.id, id)).limit(1);
  if (!lb) throw notFound("load balancer", id);
  return lb;
}

/** The LB's first token, inside createLb's transaction. */
export async function issueFirstToken(rt: ServiceRuntime, tx: Queryable, actor: Actor, lbId: string): Promise<{ token: string; keyId: string }> {
  const token = rt.newLbToken();
  const { keyId } = await insertToken(tx, lbId, "current", token, Date.now());
  await recordAudit(tx, actor, "lb.token.issue", `lb:${lbId}`, null, { keyId });
  return { token, keyId };
}

/**
 * A fresh token replacing every token of the LB (a new LB's bootstrap, a lost or leaked token, an
 * LB restarted without its credentials file). Returned once: the operator configures the LB with it
 * (MERIDIAN_LB_TOKEN) and restarts it; until then the LB cannot prove itself and gets nothing. The
 * LB stops being a peer of the others until it proves the new token.
 */
export async function issueLbToken(rt: ServiceRuntime, actor: Actor, input: { id: string }): Promise<{ id: string; keyId: string; token: string }> {
  const token = rt.newLbToken();
  const { keyId } = await rt.store.transaction(async (tx) => {
    const { lbProofs, lbTokens } = tx.tables;
    await requireLb(tx, input.id);
    const before = (await lbTokenRows(tx, input.id)).map((row) => row.keyId);
    await tx.db.delete(lbTokens).where(eq(lbTokens.lbId, input.id));
    await tx.db.delete(lbProofs).where(eq(lbProofs.lbId, input.id));
    const issued = await insertToken(tx, input.id, "current", token, Date.now());
    await recordAudit(tx, actor, "lb.token.issue", `lb:${input.id}`, before.length > 0 ? { keyIds: before } : null, { keyId: issued.keyId });
    return issued;
  });
  // Saved: the answer carries the token whatever its follow-ups do.
  await afterCommit(rt, "lb.token.issue", {
    proofs: () => rt.lbProofs.forget(input.id),
    publish: () => rt.publisher.publishAll(),
    credentials: () => rt.credentials.wake(),
  });
  return { id: input.id, keyId, token };
}

/**
 * Starts a rotation: a `pending` token the console installs on the LB over its authenticated admin
 * API, then presents instead of the current one, which the LB keeps accepting for the grace period.
 * Nothing for the operator to configure; the LB persists the new token in its credentials file. The
 * peers' configs carry both peer credentials from now until the old token is retired.
 */
export async function rotateLbToken(rt: ServiceRuntime, actor: Actor, input: { id: string }): Promise<{ id: string; keyId: string }> {
  const { keyId } = await rt.store.transaction(async (tx) => {
    await requireLb(tx, input.id);
    const rows = await lbTokenRows(tx, input.id);
    const current = rows.find((row) => row.state === "current");
    if (!current) throw precondition("this load balancer has no token yet; issue one first");
    const pending = rows.find((row) => row.state === "pending");
    if (pending) throw precondition(`a rotation to token ${pending.keyId} is waiting for the LB to answer; it finishes when the LB is reachable`);
    const retiring = rows.find((row) => row.state === "retiring");
    if (retiring) {
      const when = retiring.retireAt ? new Date(retiring.retireAt).toISOString() : "soon";
      throw precondition(`the previous token ${retiring.keyId} is still accepted until ${when}; rotate again after that`);
    }
    const next = await insertToken(tx, input.id, "pending", rt.newLbToken(), Date.now());
    await recordAudit(tx, actor, "lb.token.rotate", `lb:${input.id}`, { current: current.keyId }, { pending: next.keyId });
    return next;
  });
  await afterCommit(rt, "lb.token.rotate", { publish: () => rt.publisher.publishAll(), credentials: () => rt.credentials.wake() });
  return { id: input.id, keyId };
}
