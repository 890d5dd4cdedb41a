// Failover (after SkyLB): an LB that fails (operator-triggered, or after N failed probes) hands its
// replicas and its region's entrypoint to the nearest healthy LB by the observed region RTT matrix.
// The target then treats those replicas as local (it is pushed a config including them). Failback
// reverses both. One transaction per operation; every operation audited. A failover the health
// monitor made is marked (failedOverAutomatically) so that auto-failback.ts may undo it.
import "server-only";
import { and, eq, inArray, isNull, or } from "drizzle-orm";
import type { Logger } from "pino";
import type { Store } from "@meridian/db";
import { type Actor, recordAudit } from "../audit-trail";
import { notFound, precondition } from "../errors";
import type { ConfigPublisher } from "./config-publisher";
import type { LbHealthBook } from "./lb-health";
import { lbTakesClients, nearestHealthyLb } from "./nearest-lb";
import { forUpdate } from "./row-lock";

/** What failover uses, and nothing else. */
export interface FailoverDeps {
  store: Store;
  log: Logger;
  book: Pick<LbHealthBook, "isHealthy" | "lb" | "probedAll">;
  publisher: Pick<ConfigPublisher, "publishAll" | "kick">;
  /** ConsoleMetrics' counters, declared here because the metrics module reads the runtime. */
  metrics: { countFailover(lbId: string, automatic: boolean): void; countFailback(lbId: string, automatic: boolean): void };
}

export interface FailoverResult {
  lbId: string;
  targetLbId: string;
  movedReplicas: string[];
  movedEntrypoints: string[];
  /** Failed-over LBs this LB stood in for, whose stand-in the target became (a failover chain). */
  nowStandsInFor?: string[];
}

export class FailoverService {
  constructor(private readonly deps: FailoverDeps) {}

  async failover(lbId: string, actor: Actor, options: { automatic?: boolean } = {}): Promise<FailoverResult> {
    const result = await this.deps.store.transaction(async (tx) => {
      const { entrypoints, loadBalancers, replicas } = tx.tables;
      // Locked first: an automatic and an operator's failover of one LB at once would otherwise both
      // read it healthy on PostgreSQL, and the second, finding the region's entrypoint already moved,
      // would record that the failover did not take it, so failback would leave it away.
      const [lb] = await forUpdate(tx, tx.db.select().from(loadBalancers).where(eq(loadBalancers.id, lbId)).limit(1));
      if (!lb) throw notFound("load balancer", lbId);
      if (lb.state === "failed-over") {
        throw precondition(`load balancer "${lb.name}" is already failed over to "${lb.failedOverTo ?? "?"}"; fail it back first`);
      }
      const target = (await nearestHealthyLb(tx, this.deps.book, lb.regionId, lb.id))?.lb ?? null;
      if (!target) {
        const selfHealthy = lbTakesClients(lb, this.deps.book);
        throw precondition(
          selfHealthy
            ? `cannot fail over "${lb.name}": it is the only healthy load balancer (that has proved it holds its token), so no other LB can take its replicas and entrypoint`
            : `cannot fail over "${lb.name}": no other load balancer is healthy (and has proved it holds its token) to take its replicas and entrypoint`,
        );
      }
      // Locked too, and read again: a delete of the target that committed meanwhile (PostgreSQL) would
      // otherwise undo this failover through its foreign keys, and one still running waits for us.
      // A target moved to another region meanwhile is no longer the nearest.
      const [lockedTarget] = await forUpdate(tx, tx.db.select().from(loadBalancers).where(eq(loadBalancers.id, target.id)).limit(1));
      if (lockedTarget?.state !== "healthy" || lockedTarget.regionId !== target.regionId) {
        throw precondition(`load balancer "${target.name}" changed while "${lb.name}" failed over to it; try again`);
      }
      // LBs failed over to this one are now stood in for by the target, which takes their replicas and
      // entrypoints below: a replica later homed on one of them is served where its region-mates are
      // (home-lb.ts, rehomedTarget), never by this LB, which is pushed nothing while failed over.
      // Before the replicas and entrypoints, in the order every operation locks LBs then their rows:
      // a failback of such an LB, holding its row and waiting for its replicas' rows, deadlocked with
      // this failover holding those rows and waiting for the LB's (review r39/4). Read committed: an
      // LB failed back meanwhile no longer matches, and its replicas, home again, are not moved.
      const stoodInFor = await tx.db
        .update(loadBalancers)
        .set({ failedOverTo: target.id })
        .where(eq(loadBalancers.failedOverTo, lb.id))
        .returning({ id: loadBalancers.id });
      // Replicas served by the failed LB: its own, and any it had taken over from an earlier failover.
      const moved = (await tx.db.select().from(replicas)).filter((r) => (r.rehomedToLbId ?? r.homeLbId) === lb.id);
      if (moved.length > 0) {
        // Still served by this LB when the write comes: an edit that gave a replica another home
        // and committed after the read above (PostgreSQL) keeps it.
        await tx.db
          .update(replicas)
          .set({ rehomedToLbId: target.id })
          .where(
            and(
              inArray(
                replicas.id,
                moved.map((r) => r.id),
              ),
              or(eq(replicas.rehomedToLbId, lb.id), and(isNull(replicas.rehomedToLbId), eq(replicas.homeLbId, lb.id))),
            ),
          );
      }
      const entries = await tx.db.select().from(entrypoints).where(eq(entrypoints.lbId, lb.id));
      const now = Date.now();
      await tx.db.update(entrypoints).set({ lbId: target.id, updatedAt: now }).where(eq(entrypoints.lbId, lb.id));
      // The state read above is a condition of the write: a change that slipped in between (the
      // lock is PostgreSQL's only) refuses this failover rather than overwriting it.
      const changed = await tx.db
        .update(loadBalancers)
        .set({
          state: "failed-over",
          failedOverTo: target.id,
          failedOverAutomatically: options.automatic === true,
          failedOverEntrypoint: entries.some((e) => e.regionId === lb.regionId),
        })
        .where(and(eq(loadBalancers.id, lb.id), eq(loadBalancers.state, lb.state)))
        .returning({ id: loadBalancers.id });
      if (changed.length === 0) throw precondition(`load balancer "${lb.name}" changed state while failing over; try again`);
      const outcome: FailoverResult = {
        lbId: lb.id,
        targetLbId: target.id,
        movedReplicas: moved.map((r) => r.id),
        movedEntrypoints: entries.map((e) => e.regionId),
        ...(stoodInFor.length > 0 ? { nowStandsInFor: stoodInFor.map((l) => l.id) } : {}),
      };
      await recordAudit(
        tx,
        actor,
        options.automatic ? "lb.failover.automatic" : "lb.failover",
        `lb:${lb.id}`,
        {
          state: lb.state,
          replicas: moved.map((r) => ({ id: r.id, servedBy: r.rehomedToLbId ?? r.homeLbId })),
          entrypoints: entries.map((e) => ({ region: e.regionId, lbId: e.lbId })),
        },
        { state: "failed-over", failedOverTo: target.id, ...outcome },
        now,
      );
      return outcome;
    });
    this.deps.metrics.countFailover(lbId, options.automatic === true);
    this.deps.log.warn(result, "load balancer failed over");
    await this.deps.publisher.publishAll();
    return result;
  }

  /** `automatic`: the health monitor fails back after the LB stayed healthy for `healthyForMs`. */
  async failback(lbId: string, actor: Actor, options: { automatic?: boolean; healthyForMs?: number } = {}): Promise<FailoverResult> {
    const result = await this.deps.store.transaction(async (tx) => {
      const { entrypoints, loadBalancers, replicas } = tx.tables;
      // Locked first, as in failover: two failbacks at once would both move the replicas home.
      const [lb] = await forUpdate(tx, tx.db.select().from(loadBalancers).where(eq(loadBalancers.id, lbId)).limit(1));
      if (!lb) throw notFound("load balancer", lbId);
      // A failed LB that was never failed over still serves its own replicas and region: failing it
      // back would only move its region's entrypoint, behind the health monitor's back.
      if (lb.state !== "failed-over") throw precondition(`load balancer "${lb.name}" is not failed over; nothing to fail back (it is ${lb.state})`);
      if (this.deps.book.isHealthy(lb.id) === false) {
        throw precondition(`cannot fail back "${lb.name}": it does not answer its health probe (${this.deps.book.lb(lb.id)?.error ?? "no answer"})`);
      }
      const target = lb.failedOverTo;
      const returning = (await tx.db.select().from(replicas).where(eq(replicas.homeLbId, lb.id))).filter((r) => r.rehomedToLbId !== null);
      if (returning.length > 0) {
        await tx.db
          .update(replicas)
          .set({ rehomedToLbId: null })
          .where(
            inArray(
              replicas.id,
              returning.map((r) => r.id),
            ),
          );
      }
      // The LB's own region points back at it when its failover took the region's entrypoint away
      // (or the region has none). Another LB of the region that was the entrypoint all along keeps
      // it: failback reverses the failover, nothing more. Other regions it had stood in for stay.
      const now = Date.now();
      const [before] = await tx.db.select().from(entrypoints).where(eq(entrypoints.regionId, lb.regionId)).limit(1);
      const reclaims = before === undefined || lb.failedOverEntrypoint !== false;
      if (reclaims) {
        await tx.db
          .insert(entrypoints)
          .values({ regionId: lb.regionId, lbId: lb.id, updatedAt: now })
          .onConflictDoUpdate({ target: entrypoints.regionId, set: { lbId: lb.id, updatedAt: now } });
      }
      const changed = await tx.db
        .update(loadBalancers)
        .set({ state: "healthy", failedOverTo: null, failedOverAutomatically: false, failedOverEntrypoint: null })
        .where(and(eq(loadBalancers.id, lb.id), eq(loadBalancers.state, "failed-over")))
        .returning({ id: loadBalancers.id });
      if (changed.length === 0) throw precondition(`load balancer "${lb.name}" changed state while failing back; try again`);
      const outcome: FailoverResult = {
        lbId: lb.id,
        targetLbId: target ?? lb.id,
        movedReplicas: returning.map((r) => r.id),
        movedEntrypoints: reclaims ? [lb.regionId] : [],
      };
      await recordAudit(
        tx,
        actor,
        options.automatic ? "lb.failback.automatic" : "lb.failback",
        `lb:${lb.id}`,
        { state: lb.state, failedOverTo: target, entrypoint: before?.lbId ?? null, replicas: returning.map((r) => ({ id: r.id, servedBy: r.rehomedToLbId })) },
        {
          state: "healthy",
          entrypoint: reclaims ? lb.id : (before?.lbId ?? null),
          replicas: returning.map((r) => ({ id: r.id, servedBy: lb.id })),
          ...(options.healthyForMs !== undefined ? { healthyForMs: options.healthyForMs } : {}),
        },
        now,
      );
      return outcome;
    });
    this.deps.metrics.countFailback(lbId, options.automatic === true);
    this.deps.log.info(result, "load balancer failed back");
    await this.deps.publisher.publishAll();
    this.deps.publisher.kick(lbId);
    return result;
  }
}
