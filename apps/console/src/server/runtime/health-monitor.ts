// HealthMonitor: probes every LB on an interval and records what it learns in the LbHealthBook.
// - LB health: GET /health. After `failoverAfter` consecutive failures the LB is failed over
//   automatically (when enabled) or marked failed; a failed (not failed-over) LB that answers again
//   is marked healthy; one the monitor failed over is failed back after a healthy period
//   (auto-failback.ts).
// - Replica health, in-flight, queued tokens and share: from each LB's GET /admin/state.
// - Observed RTTs (LB region -> replica region) are folded into observed_rtts (EWMA).
// - Replicas that joined in a surprising way are logged once (replica-warnings.ts).
// - Entrypoints are resolved after every round, so a fallback or an alarm is logged when it happens
//   (entrypoint-resolver.ts).
// - The config version each LB reports goes to the ConfigPublisher, which re-pushes when the LB
//   lost its config (restarted without its state file). Before it, an LB whose limits the console
//   stores none of has the ones it runs adopted (lb-settings-adoption.ts).
// - Every console probes (so that any console's pages show live health), but only the leader acts
//   on what it learns: failover, marks, failback, RTTs, telemetry subscriptions, re-pushes, warnings.
import "server-only";
import { and, eq } from "drizzle-orm";
import type { Logger } from "pino";
import { nextRttEwma } from "@meridian/lb-core";
import type { LbState } from "@meridian/protocol";
import type { LoadBalancerRow, Store } from "@meridian/db";
import { regionNamesById } from "../region-names";
import { recordAudit, SYSTEM_HEALTH } from "../audit-trail";
import type { AutoFailback } from "./auto-failback";
import type { ConfigPublisher } from "./config-publisher";
import type { EntrypointResolver } from "./entrypoint-resolver";
import type { FailoverService } from "./failover";
import type { LbAdminClient } from "./lb-admin-client";
import type { LbHealth, LbHealthBook } from "./lb-health";
import type { SettingsAdoption } from "./lb-settings-adoption";
import { replicaWarningsFrom, type ReplicaWarningLog } from "./replica-warnings";
import type { TelemetryHub } from "./telemetry-hub";

/** What the monitor uses, and nothing else. */
export interface HealthMonitorDeps {
  /** Whether this console leads (acts on probes) or only observes. */
  acting: () => boolean;
  store: Store;
  log: Logger;
  lbClient: Pick<LbAdminClient, "health" | "state">;
  book: Pick<LbHealthBook, "lb" | "record" | "keepOnly" | "completeRound" | "startGrace" | "starting">;
  publisher: Pick<ConfigPublisher, "onReportedVersion" | "publishAll">;
  telemetry: Pick<TelemetryHub, "sync">;
  failover: Pick<FailoverService, "failover">;
  autoFailback: Pick<AutoFailback, "observe" | "failBackIfDue">;
  /** Resolved after every round, so an entrypoint that falls back (or has nowhere to go) is logged
   * when it happens, not when a client next asks. */
  entrypoints: Pick<EntrypointResolver, "resolve">;
  replicaWarnings: Pick<ReplicaWarningLog, "report">;
  intervalMs: number;
  /** Consecutive failed probes before an LB is failed over (or marked failed). */
  failoverAfter: number;
  autoFailover: boolean;
  /** Adopts an LB's running settings (lb-settings-adoption.ts); none in tests that do not give one. */
  adoption?: Pick<SettingsAdoption, "adopt">;
}

export class HealthMonitor {
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private readonly adoption: Pick<SettingsAdoption, "adopt"> | null;

  constructor(private readonly deps: HealthMonitorDeps) {
    this.adoption = deps.adoption ?? null;
    // Probes may run before start() (tick() in scripts and tests): the startup grace runs from here.
    deps.book.startGrace(Date.now());
  }

  start(): void {
    if (this.timer) return;
    this.deps.book.startGrace(Date.now());
    this.timer = setInterval(() => this.round(), this.deps.intervalMs);
    this.timer.unref?.();
    this.round();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** A timer's round: a round still probing when the runtime stops may find the database closed;
   * that is not worth a crash (an unhandled rejection), and while running it is logged. */
  private round(): void {
    this.tick().catch((error: unknown) => {
      if (this.timer) this.deps.log.error({ err: error }, "health round failed");
    });
  }

  /** One probe round over every LB; concurrent calls share the round in progress. */
  tick(): Promise<void> {
    this.ticking ??= this.probeAll().finally(() => {
      this.ticking = null;
    });
    return this.ticking;
  }

  private async probeAll(): Promise<void> {
    const { store } = this.deps;
    const rows = await store.db.select().from(store.tables.loadBalancers);
    this.deps.book.keepOnly(new Set(rows.map((r) => r.id)));
    await Promise.all(rows.map((lb) => this.probe(lb)));
    this.deps.book.completeRound();
    if (!this.deps.acting()) return;
    await this.deps.telemetry.sync();
    await this.deps.entrypoints.resolve();
    this.deps.replicaWarnings.report(await replicaWarningsFrom(store, (lbId) => this.deps.book.lb(lbId)?.state ?? null));
  }

  private async probe(lb: LoadBalancerRow): Promise<void> {
    const endpoint = { id: lb.id, adminBase: lb.adminUrl ?? lb.url };
    const previous = this.deps.book.lb(lb.id);
    const now = Date.now();
    const health = await this.deps.lbClient.health(endpoint);
    const entry: LbHealth = previous ?? {
      healthy: null,
      consecutiveFailures: 0,
      lastProbeAt: null,
      lastOkAt: null,
      everHealthy: false,
      error: null,
      state: null,
      stateAt: null,
    };
    entry.lastProbeAt = now;
    if (health.ok) {
      const { state, error } = await this.deps.lbClient.state(endpoint);
      entry.healthy = true;
      entry.consecutiveFailures = 0;
      entry.lastOkAt = now;
      entry.everHealthy = true;
      entry.error = error;
      if (state) {
        entry.state = state;
        entry.stateAt = now;
        if (this.deps.acting()) await this.afterState(lb, state);
      }
    } else {
      entry.healthy = false;
      entry.consecutiveFailures += 1;
      entry.error = health.error;
    }
    this.deps.book.record(lb.id, entry);
    // Before the leadership check: the healthy run a re-elected console acts on must include the
    // failures it saw while following.
    this.deps.autoFailback.observe(lb.id, entry.healthy === true, now);
    if (!this.deps.acting()) return;
    try {
      await this.afterProbe(lb, entry);
    } catch (error) {
      this.deps.log.error({ lbId: lb.id, err: error }, "health follow-up failed");
    }
  }

  private async afterState(lb: LoadBalancerRow, state: LbState): Promise<void> {
    // Before the version report, which may wake the LB's push loop: the push then carries them.
    if (await this.adoption?.adopt(lb)) await this.deps.publisher.publishAll();
    await this.deps.publisher.onReportedVersion(lb, state.configVersion);
    await this.recordRtts(lb, state);
  }

  private async recordRtts(lb: LoadBalancerRow, state: LbState): Promise<void> {
    const now = Date.now();
    const { store } = this.deps;
    const regionNames = await regionNamesById(store);
    const regionName = regionNames.get(lb.regionId) ?? state.region;
    // The replica's real region from the DB: a re-homed replica is presented to its new LB with
    // that LB's region (config-builder.ts), which would file its RTT under the wrong pair.
    const { replicas } = store.tables;
    const replicaRegion = new Map(
      (await store.db.select({ id: replicas.id, regionId: replicas.regionId }).from(replicas)).map((r) => [r.id, regionNames.get(r.regionId)]),
    );
    const samples = new Map<string, number[]>();
    for (const replica of state.replicas) {
      if (replica.rttMs === null) continue;
      const toRegion = replicaRegion.get(replica.id) ?? replica.region;
      const list = samples.get(toRegion) ?? [];
      list.push(replica.rttMs);
      samples.set(toRegion, list);
    }
    if (samples.size === 0) return;
    // Smoothed with the LBs' own RTT average (lb-core's nextRttEwma), read and written in one
    // transaction; only the leader writes these rows.
    await store.transaction(async (tx) => {
      const { observedRtts } = tx.tables;
      const previous = new Map((await tx.db.select().from(observedRtts).where(eq(observedRtts.fromRegion, regionName))).map((row) => [row.toRegion, row]));
      for (const [toRegion, values] of samples) {
        const before = previous.get(toRegion);
        const row = { rttMs: nextRttEwma(before?.rttMs ?? null, Math.min(...values)), samples: (before?.samples ?? 0) + 1, updatedAt: now };
        await tx.db
          .insert(observedRtts)
          .values({ fromRegion: regionName, toRegion, ...row })
          .onConflictDoUpdate({ target: [observedRtts.fromRegion, observedRtts.toRegion], set: row });
      }
    });
  }

  private async afterProbe(lb: LoadBalancerRow, entry: LbHealth): Promise<void> {
    await this.deps.autoFailback.failBackIfDue(lb, entry.lastProbeAt ?? Date.now());
    const inGrace = this.deps.book.starting(lb.id, Date.now());
    const down = entry.healthy === false && entry.consecutiveFailures >= this.deps.failoverAfter && !inGrace;
    if (down && lb.state === "healthy") {
      this.deps.log.warn({ lbId: lb.id, failures: entry.consecutiveFailures, error: entry.error }, "LB failed its health probes");
      if (await this.failOverAutomatically(lb, entry, "warn")) return;
      // A refused failover (e.g. an operator failed the LB over during this round) falls through
      // here too; setState then changes nothing, as the LB is no longer in the state this round read.
      await this.setState(lb, "failed", `after ${entry.consecutiveFailures} failed probes: ${entry.error ?? "no answer"}`);
    } else if (down && lb.state === "failed") {
      // Marked failed because its failover was refused (no other LB could take it then, e.g. every
      // LB was cut off at once): tried again each round, since a target may answer by now.
      await this.failOverAutomatically(lb, entry, "debug");
    } else if (entry.healthy === true && lb.state === "failed") {
      if (await this.setState(lb, "healthy", "answers its health probe again")) await this.deps.publisher.publishAll();
    }
  }

  /** Fails the LB over when automatic failover is on and the LB ever answered; true when it did. A
   * refusal is logged at `refusedAt` (a retry every round logs at debug). */
  private async failOverAutomatically(lb: LoadBalancerRow, entry: LbHealth, refusedAt: "warn" | "debug"): Promise<boolean> {
    if (!this.deps.autoFailover || !entry.everHealthy) return false;
    try {
      await this.deps.failover.failover(lb.id, SYSTEM_HEALTH, { automatic: true });
      return true;
    } catch (error) {
      this.deps.log[refusedAt]({ lbId: lb.id, reason: error instanceof Error ? error.message : String(error) }, "automatic failover refused");
      return false;
    }
  }

  /** Moves the LB from the state this round read (`lb.state`) to `state`; true when it did. The
   * round read the row before probing (up to the probe timeout): an operator's failover or failback
   * committed meanwhile is not written over, and nothing is audited. */
  private async setState(lb: LoadBalancerRow, state: "healthy" | "failed", reason: string): Promise<boolean> {
    return await this.deps.store.transaction(async (tx) => {
      const { loadBalancers } = tx.tables;
      const changed = await tx.db
        .update(loadBalancers)
        .set({ state })
        .where(and(eq(loadBalancers.id, lb.id), eq(loadBalancers.state, lb.state)))
        .returning({ id: loadBalancers.id });
      if (changed.length === 0) return false;
      await recordAudit(tx, SYSTEM_HEALTH, state === "failed" ? "lb.mark-failed" : "lb.mark-healthy", `lb:${lb.id}`, { state: lb.state }, { state, reason });
      return true;
    });
  }
}
