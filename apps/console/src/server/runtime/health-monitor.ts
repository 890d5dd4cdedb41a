// HealthMonitor: probes every LB on an interval.
// - LB health: GET /health. After `failoverAfter` consecutive failures the LB is failed over
//   automatically (when enabled) or marked failed; a failed (not failed-over) LB that answers again
//   is marked healthy; one the monitor failed over is failed back after a healthy period
//   (auto-failback.ts).
// - Replica health, in-flight, queued tokens and share: from each LB's GET /admin/state.
// - Observed RTTs (LB region -> replica region) are folded into observed_rtts (EWMA).
// - Replicas that joined in a surprising way are logged once (replica-warnings.ts).
// - An LB that reports an older config version than it acknowledged (restarted without its state
//   file) gets a fresh push.
import { eq, sql } from "drizzle-orm";
import type { LbState, ReplicaRuntimeState } from "@meridian/protocol";
import { loadBalancers, observedRtts, regions, replicas, type LoadBalancerRow } from "@meridian/db";
import { SYSTEM_HEALTH } from "../services/context";
import { recordAudit } from "../services/audit";
import { ReplicaWarningLog, replicaWarningsFrom } from "./replica-warnings";
import type { ConsoleRuntime } from "./runtime";

export interface LbHealth {
  /** null before the first probe finished. */
  healthy: boolean | null;
  consecutiveFailures: number;
  lastProbeAt: number | null;
  lastOkAt: number | null;
  /** Answered at least once since the console started. Only such an LB is failed over
   * automatically: one that was never up (e.g. still starting) is marked failed instead. */
  everHealthy: boolean;
  error: string | null;
  state: LbState | null;
  stateAt: number | null;
}

export interface ReplicaLiveView {
  healthy: boolean | null;
  inFlight: number;
  queuedTokens: number;
  rttMs: number | null;
  cacheHitRate: number | null;
  predictionAccuracy: number | null;
  full: boolean;
}

const RTT_ALPHA = 0.3;
/** An LB never seen healthy is not marked failed during this long after the monitor starts: at
 * startup the LBs and the console come up in any order. */
const STARTUP_GRACE_MS = 20_000;

export class HealthMonitor {
  private readonly lbs = new Map<string, LbHealth>();
  private readonly reportedVersions = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private startedAt = Date.now();
  private readonly replicaWarnings: ReplicaWarningLog;

  constructor(private readonly rt: ConsoleRuntime) {
    this.replicaWarnings = new ReplicaWarningLog(rt.log);
  }

  start(): void {
    if (this.timer) return;
    this.startedAt = Date.now();
    const interval = this.rt.options.healthIntervalMs;
    this.timer = setInterval(() => void this.tick(), interval);
    this.timer.unref?.();
    void this.tick();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  lb(lbId: string): LbHealth | undefined {
    return this.lbs.get(lbId);
  }

  /** null = not probed yet. */
  isHealthy(lbId: string): boolean | null {
    return this.lbs.get(lbId)?.healthy ?? null;
  }

  reportedConfigVersion(lbId: string): number | null {
    return this.reportedVersions.get(lbId) ?? null;
  }

  noteReportedVersion(lbId: string, version: number): void {
    this.reportedVersions.set(lbId, Math.max(version, this.reportedVersions.get(lbId) ?? 0));
  }

  forget(lbId: string): void {
    this.lbs.delete(lbId);
    this.reportedVersions.delete(lbId);
  }

  /** What the LBs report about a replica. The serving LB's view wins; in-flight and queued tokens
   * add up over every LB (each reports only its own requests). */
  replica(replicaId: string, servingLbId: string | null): ReplicaLiveView | null {
    let preferred: ReplicaRuntimeState | null = null;
    let any: ReplicaRuntimeState | null = null;
    let inFlight = 0;
    let queuedTokens = 0;
    for (const [lbId, health] of this.lbs) {
      if (!health.healthy || !health.state) continue;
      const entry = health.state.replicas.find((r) => r.id === replicaId);
      if (!entry) continue;
      inFlight += entry.inFlight;
      queuedTokens += entry.queuedTokens;
      any ??= entry;
      if (lbId === servingLbId) preferred = entry;
    }
    const view = preferred ?? any;
    if (!view) return null;
    return {
      healthy: view.healthy,
      inFlight,
      queuedTokens,
      rttMs: view.rttMs,
      cacheHitRate: view.cacheHitRate,
      predictionAccuracy: view.predictionAccuracy,
      full: view.full,
    };
  }

  /** One probe round over every LB; concurrent calls share the round in progress. */
  tick(): Promise<void> {
    this.ticking ??= this.probeAll().finally(() => {
      this.ticking = null;
    });
    return this.ticking;
  }

  private async probeAll(): Promise<void> {
    const rows = this.rt.db.select().from(loadBalancers).all();
    const known = new Set(rows.map((r) => r.id));
    for (const id of this.lbs.keys()) if (!known.has(id)) this.lbs.delete(id);
    await Promise.all(rows.map((lb) => this.probe(lb)));
    this.rt.telemetry.sync();
    this.replicaWarnings.report(replicaWarningsFrom(this.rt.db, (lbId) => this.lbs.get(lbId)?.state ?? null));
  }

  private async probe(lb: LoadBalancerRow): Promise<void> {
    const endpoint = { id: lb.id, adminBase: lb.adminUrl ?? lb.url };
    const previous = this.lbs.get(lb.id);
    const now = Date.now();
    const health = await this.rt.lbClient.health(endpoint);
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
      const { state, error } = await this.rt.lbClient.state(endpoint);
      entry.healthy = true;
      entry.consecutiveFailures = 0;
      entry.lastOkAt = now;
      entry.everHealthy = true;
      entry.error = error;
      if (state) {
        entry.state = state;
        entry.stateAt = now;
        this.afterState(lb, state);
      }
    } else {
      entry.healthy = false;
      entry.consecutiveFailures += 1;
      entry.error = health.error;
    }
    this.lbs.set(lb.id, entry);
    try {
      this.afterProbe(lb, entry);
    } catch (error) {
      this.rt.log.error({ lbId: lb.id, err: error }, "health follow-up failed");
    }
  }

  private afterState(lb: LoadBalancerRow, state: LbState): void {
    const previous = this.reportedVersions.get(lb.id);
    this.reportedVersions.set(lb.id, state.configVersion);
    if (state.configVersion < lb.ackedVersion && previous !== undefined && lb.state !== "failed-over") {
      this.rt.log.warn({ lbId: lb.id, reported: state.configVersion, acked: lb.ackedVersion }, "LB lost its config; re-pushing");
      this.rt.publisher.publish(lb.id, { force: true });
    } else if (state.configVersion < lb.configVersion) {
      this.rt.publisher.kick(lb.id);
    }
    this.recordRtts(lb, state);
  }

  private recordRtts(lb: LoadBalancerRow, state: LbState): void {
    const now = Date.now();
    const regionNames = new Map(this.rt.db.select().from(regions).all().map((r) => [r.id, r.name]));
    const regionName = regionNames.get(lb.regionId) ?? state.region;
    // The replica's real region from the DB: a re-homed replica is presented to its new LB with
    // that LB's region (config-builder.ts), which would file its RTT under the wrong pair.
    const replicaRegion = new Map(
      this.rt.db.select({ id: replicas.id, regionId: replicas.regionId }).from(replicas).all().map((r) => [r.id, regionNames.get(r.regionId)]),
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
    this.rt.db.transaction((tx) => {
      for (const [toRegion, values] of samples) {
        const rtt = Math.min(...values);
        tx.insert(observedRtts)
          .values({ fromRegion: regionName, toRegion, rttMs: rtt, samples: 1, updatedAt: now })
          .onConflictDoUpdate({
            target: [observedRtts.fromRegion, observedRtts.toRegion],
            set: {
              rttMs: sql`${RTT_ALPHA} * ${rtt} + ${1 - RTT_ALPHA} * ${observedRtts.rttMs}`,
              samples: sql`${observedRtts.samples} + 1`,
              updatedAt: now,
            },
          })
          .run();
      }
    });
  }

  private afterProbe(lb: LoadBalancerRow, entry: LbHealth): void {
    this.rt.autoFailback.afterProbe(lb, entry.healthy === true, entry.lastProbeAt ?? Date.now());
    const { failoverAfter, autoFailover } = this.rt.options;
    const inGrace = !entry.everHealthy && Date.now() - this.startedAt < STARTUP_GRACE_MS;
    if (entry.healthy === false && entry.consecutiveFailures >= failoverAfter && lb.state === "healthy" && !inGrace) {
      this.rt.log.warn({ lbId: lb.id, failures: entry.consecutiveFailures, error: entry.error }, "LB failed its health probes");
      if (autoFailover && entry.everHealthy) {
        try {
          this.rt.failover.failover(lb.id, SYSTEM_HEALTH, { automatic: true });
          return;
        } catch (error) {
          this.rt.log.warn({ lbId: lb.id, reason: error instanceof Error ? error.message : String(error) }, "automatic failover refused");
        }
      }
      this.setState(lb, "failed", `after ${entry.consecutiveFailures} failed probes: ${entry.error ?? "no answer"}`);
    } else if (entry.healthy === true && lb.state === "failed") {
      this.setState(lb, "healthy", "answers its health probe again");
      this.rt.publisher.publishAll();
    }
  }

  private setState(lb: LoadBalancerRow, state: "healthy" | "failed", reason: string): void {
    this.rt.db.transaction((tx) => {
      tx.update(loadBalancers).set({ state }).where(eq(loadBalancers.id, lb.id)).run();
      recordAudit(tx, SYSTEM_HEALTH, state === "failed" ? "lb.mark-failed" : "lb.mark-healthy", `lb:${lb.id}`, { state: lb.state }, { state, reason });
    });
  }
}
