// CredentialKeeper: carries each LB's token rotation through and keeps the proof record
// (docs/ARCHITECTURE.md, "LB credentials"). On every tick (and when woken), per LB:
// 1. A new proof at the LB's admin URL is persisted in lb_proofs (as soon as the challenge is
//    answered), and the LB joins its peers' configs and may be a failover target; an answer that
//    fails the proof removes it from them (something else listens there).
// 2. A `pending` token is installed on the LB (POST /admin/credentials, with the current token);
//    once the LB holds it, it becomes `current` and the old one `retiring` for the grace period, during
//    which the LB accepts both, so nothing in flight is refused.
// 3. A `retiring` token past its time is retired on the LB, then deleted here.
// 4. Tokens the LB holds that the console never issued (or already forgot: after "issue new token")
//    are retired on the LB once it has proved the current one.
// Each step is audited by system:credentials. An LB that does not answer is retried next tick.
import "server-only";
import { and, eq } from "drizzle-orm";
import type { Logger } from "pino";
import type { LbTokenRow, LoadBalancerRow, Store } from "@meridian/db";
import { recordAudit, SYSTEM_CREDENTIALS } from "../audit-trail";
import type { ConfigPublisher } from "./config-publisher";
import type { LbAdminClient } from "./lb-admin-client";
import type { LbProofBook } from "./lb-proofs";
import { lbTokenRows } from "./lb-token-rows";
import { WakeSignal } from "./wake-signal";

export interface CredentialKeeperDeps {
  store: Store;
  log: Logger;
  lbClient: Pick<LbAdminClient, "updateCredentials">;
  proofs: Pick<LbProofBook, "get" | "onRecord">;
  publisher: Pick<ConfigPublisher, "publishAll">;
  /** How long the LB keeps accepting the previous token after a rotation. */
  graceMs: number;
  intervalMs?: number;
}

export interface RotationStatus {
  lastError: string | null;
  lastAttemptAt: number | null;
}

export class CredentialKeeper {
  private readonly signal = new WakeSignal();
  private readonly status = new Map<string, RotationStatus>();
  private running = false;
  private stopped = false;
  /** Bumped by every start(): a loop started before the last stop() is stale. A stop() and start()
   * while an LB call is in flight (deposed and elected again) would otherwise leave two loops acting
   * on the same tokens, the stale one on rows it read before the stop. */
  private generation = 0;

  constructor(private readonly deps: CredentialKeeperDeps) {
    // Persisted as soon as the challenge is answered (also before start(): a health probe challenges
    // too): failover, the entrypoint map and the peer lists read lb_proofs. Not after stop(): the
    // database may be closing.
    deps.proofs.onRecord((lbId) => {
      if (this.stopped) return;
      // The book calls back synchronously; recording is async, and its failure is logged (an
      // unhandled rejection would end the process).
      void this.recordProofOf(lbId)
        .catch((error: unknown) => {
          if (!this.stopped) deps.log.error({ lbId, err: error }, "recording an LB's proof failed");
        })
        .finally(() => this.signal.wake());
    });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopped = false;
    this.generation += 1;
    void this.run(this.generation);
  }

  stop(): void {
    this.running = false;
    this.stopped = true;
    this.signal.wake();
  }

  wake(): void {
    this.signal.wake();
  }

  rotationStatus(lbId: string): RotationStatus {
    return this.status.get(lbId) ?? { lastError: null, lastAttemptAt: null };
  }

  /** Whether the loop of `generation` may still act: the keeper runs and has not been restarted since. */
  private current(generation: number): boolean {
    return this.running && this.generation === generation;
  }

  /** One pass over every LB; it ends early once the keeper is stopped (the database may be closing)
   * or restarted (the new loop carries on). */
  async tick(generation = this.generation): Promise<void> {
    const { db, tables } = this.deps.store;
    for (const lb of await db.select().from(tables.loadBalancers)) {
      if (!this.current(generation)) return;
      try {
        await this.advance(lb, generation);
      } catch (error) {
        this.deps.log.error({ lbId: lb.id, err: error }, "credential step failed");
      }
    }
  }

  private async run(generation: number): Promise<void> {
    while (this.current(generation)) {
      try {
        await this.tick(generation);
      } catch (error) {
        // The database went away (shutdown) or failed for a moment: try again next round.
        if (this.current(generation)) this.deps.log.error({ err: error }, "credential round failed");
      }
      await this.signal.wait(this.deps.intervalMs ?? 2_000);
    }
  }

  private async recordProofOf(lbId: string): Promise<void> {
    const { db, tables } = this.deps.store;
    const { lbProofs, loadBalancers } = tables;
    const [lb] = await db.select().from(loadBalancers).where(eq(loadBalancers.id, lbId)).limit(1);
    if (!lb) return;
    const adminBase = lb.adminUrl ?? lb.url;
    const proof = this.deps.proofs.get(lb.id);
    if (!proof || proof.adminBase !== adminBase) return;
    const [stored] = await db.select().from(lbProofs).where(eq(lbProofs.lbId, lb.id)).limit(1);
    if (proof.provenKeyId !== null && proof.provenAt !== null && stored?.adminBase !== adminBase) {
      await db
        .insert(lbProofs)
        .values({ lbId: lb.id, adminBase, keyId: proof.provenKeyId, provenAt: proof.provenAt })
        .onConflictDoUpdate({ target: lbProofs.lbId, set: { adminBase, keyId: proof.provenKeyId, provenAt: proof.provenAt } });
      this.deps.log.info({ lbId: lb.id, adminBase, keyId: proof.provenKeyId }, "LB proved it holds its token; its peers may poll it");
      await this.deps.publisher.publishAll();
    } else if (proof.refused && stored) {
      await db.delete(lbProofs).where(eq(lbProofs.lbId, lb.id));
      this.deps.log.warn({ lbId: lb.id, adminBase, error: proof.error }, "LB failed its proof; no LB polls it until it proves itself again");
      await this.deps.publisher.publishAll();
    }
  }

  private async advance(lb: LoadBalancerRow, generation: number): Promise<void> {
    const rows = await lbTokenRows(this.deps.store, lb.id);
    const current = rows.find((r) => r.state === "current");
    if (!current) return;
    const endpoint = { id: lb.id, adminBase: lb.adminUrl ?? lb.url };
    const pending = rows.find((r) => r.state === "pending");
    const retiring = rows.find((r) => r.state === "retiring");
    if (pending) {
      const answer = await this.attempt(lb.id, generation, () => this.deps.lbClient.updateCredentials(endpoint, { install: pending.token }));
      if (answer?.includes(pending.keyId)) await this.activate(lb.id, current, pending);
      return;
    }
    if (retiring && retiring.retireAt !== null && retiring.retireAt <= Date.now()) {
      const answer = await this.attempt(lb.id, generation, () => this.deps.lbClient.updateCredentials(endpoint, { retire: [retiring.keyId] }));
      if (answer && !answer.includes(retiring.keyId)) await this.retired(lb.id, retiring.id, retiring.keyId);
      return;
    }
    const proof = this.deps.proofs.get(lb.id);
    if (proof?.provenKeyId !== current.keyId) return;
    const unknown = proof.held.filter((keyId) => !rows.some((row) => row.keyId === keyId));
    if (unknown.length === 0) return;
    const answer = await this.attempt(lb.id, generation, () => this.deps.lbClient.updateCredentials(endpoint, { retire: unknown }));
    if (!answer) return;
    await this.deps.store.transaction((tx) =>
      recordAudit(tx, SYSTEM_CREDENTIALS, "lb.token.retire", `lb:${lb.id}`, { keyIds: unknown }, { keyIds: answer, reason: "not issued by this console" }),
    );
    this.deps.log.info({ lbId: lb.id, retired: unknown }, "retired LB tokens this console did not issue");
  }

  /** Runs one credential call; the LB's key ids on success, null (status noted) on failure, and null
   * when the keeper was stopped or restarted during the call: what was read before it is stale. */
  private async attempt(lbId: string, generation: number, call: () => ReturnType<LbAdminClient["updateCredentials"]>): Promise<string[] | null> {
    const result = await call();
    if (!this.current(generation)) return null;
    const status = { lastAttemptAt: Date.now(), lastError: "error" in result ? result.error : null };
    const before = this.status.get(lbId)?.lastError ?? null;
    this.status.set(lbId, status);
    if ("error" in result) {
      if (before !== result.error) this.deps.log.warn({ lbId, error: result.error }, "LB credential update failed; retrying");
      return null;
    }
    // The LB's answer is what it holds now. Step 4 reads `held` from the last challenge, which after
    // a retirement still lists the retired token: it took the console's own token for a foreign one
    // and retired it again ("not issued by this console") after every rotation.
    const proof = this.deps.proofs.get(lbId);
    if (proof) proof.held = result.keyIds;
    return result.keyIds;
  }

  /** Makes the installed token current and the previous one retiring: the two rows read before the
   * LB's answer, by id. An operator who issued a new token meanwhile replaced both; then nothing is
   * changed (matching rows by state instead demoted the fresh token and left the LB with none). */
  private async activate(lbId: string, previous: LbTokenRow, next: LbTokenRow): Promise<void> {
    const retireAt = Date.now() + this.deps.graceMs;
    const activated = await this.deps.store.transaction(async (tx) => {
      const { lbTokens } = tx.tables;
      // The previous one first: at most one row per LB and state.
      const demoted = await tx.db
        .update(lbTokens)
        .set({ state: "retiring", retireAt })
        .where(and(eq(lbTokens.id, previous.id), eq(lbTokens.state, "current")))
        .returning({ id: lbTokens.id });
      if (demoted.length === 0) return false;
      const promoted = await tx.db
        .update(lbTokens)
        .set({ state: "current" })
        .where(and(eq(lbTokens.id, next.id), eq(lbTokens.state, "pending")))
        .returning({ id: lbTokens.id });
      if (promoted.length === 0) throw new Error(`token ${next.keyId} of LB ${lbId} is no longer pending; the rotation is left as it is`);
      await recordAudit(
        tx,
        SYSTEM_CREDENTIALS,
        "lb.token.activate",
        `lb:${lbId}`,
        { current: previous.keyId },
        { current: next.keyId, retiring: previous.keyId, retireAt },
      );
      return true;
    });
    if (!activated) {
      this.deps.log.info(
        { lbId, keyId: next.keyId },
        "LB token installed, but its rotation was replaced meanwhile (a new token was issued); nothing activated",
      );
      return;
    }
    this.deps.log.info({ lbId, keyId: next.keyId, retiring: previous.keyId, retireAt }, "LB token rotated; the previous one is accepted until retireAt");
    this.signal.wake();
  }

  private async retired(lbId: string, rowId: number, keyId: string): Promise<void> {
    await this.deps.store.transaction(async (tx) => {
      await tx.db.delete(tx.tables.lbTokens).where(eq(tx.tables.lbTokens.id, rowId));
      await recordAudit(tx, SYSTEM_CREDENTIALS, "lb.token.retire", `lb:${lbId}`, { keyIds: [keyId] }, null);
    });
    this.deps.log.info({ lbId, keyId }, "previous LB token retired");
    // Its peer credential leaves the other LBs' configs.
    await this.deps.publisher.publishAll();
  }
}
