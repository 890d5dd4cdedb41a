// What the console last learned about each LB from its probes: health, failure streak and the LB's
// own /admin/state. HealthMonitor writes it; failover, the services and the pages read it. Kept apart
// from the monitor so readers need no handle on the prober (and the prober none on its readers).
import "server-only";
import type { LbState, ReplicaCacheState, ReplicaRuntimeState } from "@meridian/protocol";

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
  /** How well the serving LB's prefix index matches the replica's engine; another LB's view when that
   * one cleared the replica's part of its index more recently (it saw the flush or restart first). */
  cache: ReplicaCacheState;
}

/** How long after the console starts probing an LB never seen healthy counts as starting rather
 * than down: at startup the LBs and the console come up in any order. */
export const STARTUP_GRACE_MS = 20_000;

export class LbHealthBook {
  private readonly lbs = new Map<string, LbHealth>();
  private roundDone = false;
  private graceEndsAt = -Infinity;

  /** The console starts probing at `now`: an LB that has not answered yet is starting, not down,
   * until STARTUP_GRACE_MS later. */
  startGrace(now: number): void {
    this.graceEndsAt = now + STARTUP_GRACE_MS;
  }

  /** Never seen healthy since the console started, and the startup grace is not over: neither
   * marked failed (health-monitor.ts) nor an alarm (entrypoint-resolver.ts) yet. */
  starting(lbId: string, now: number): boolean {
    return !(this.lbs.get(lbId)?.everHealthy ?? false) && now < this.graceEndsAt;
  }

  /** The monitor finished a probe round over every LB it knew. Until then an LB with no probe yet
   * is judged by its stored state (the console just started); after it, an LB with no probe yet was
   * created since, and nothing is known about it. */
  completeRound(): void {
    this.roundDone = true;
  }

  get probedAll(): boolean {
    return this.roundDone;
  }

  lb(lbId: string): LbHealth | undefined {
    return this.lbs.get(lbId);
  }

  /** null = not probed yet. */
  isHealthy(lbId: string): boolean | null {
    return this.lbs.get(lbId)?.healthy ?? null;
  }

  record(lbId: string, entry: LbHealth): void {
    this.lbs.set(lbId, entry);
  }

  forget(lbId: string): void {
    this.lbs.delete(lbId);
  }

  /** Drops the LBs that are no longer in the database. */
  keepOnly(known: ReadonlySet<string>): void {
    for (const id of this.lbs.keys()) if (!known.has(id)) this.lbs.delete(id);
  }

  /** What the LBs report about a replica. The serving LB's view wins; in-flight and queued tokens
   * add up over every LB (each reports only its own requests). */
  replica(replicaId: string, servingLbId: string | null): ReplicaLiveView | null {
    let preferred: ReplicaRuntimeState | null = null;
    let any: ReplicaRuntimeState | null = null;
    // The newest index clear any LB recorded for the replica: the LB that notices a flushed or
    // restarted engine is the one that sent it requests, which need not be its serving LB.
    let cleared: ReplicaCacheState | null = null;
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
      if (entry.cache.lastClearAt !== null && entry.cache.lastClearAt > (cleared?.lastClearAt ?? -1)) cleared = entry.cache;
    }
    const view = preferred ?? any;
    if (!view) return null;
    const cache = cleared !== null && cleared.lastClearAt! > (view.cache.lastClearAt ?? -1) ? cleared : view.cache;
    return {
      healthy: view.healthy,
      inFlight,
      queuedTokens,
      rttMs: view.rttMs,
      cacheHitRate: view.cacheHitRate,
      predictionAccuracy: view.predictionAccuracy,
      full: view.full,
      cache,
    };
  }
}
