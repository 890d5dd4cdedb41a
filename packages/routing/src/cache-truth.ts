// CacheTruth: one LB's bookkeeping of how well its prefix index matches what each replica's engine
// actually holds, and the rules that keep it so. The LB core calls it at three moments, on whatever
// clock it runs (wall clock in the proxy, virtual clock in the simulator):
//
//   dispatch  right after the policy chose: snapshot the index's view (cache-feedback.ts).
//   report    when a response's usage arrives: apply the cached-token feedback, record the prediction
//             in the replica's rolling accuracy window, and clear the replica's routes when its cache
//             was emptied: a report that lost blocks far younger than the replica keeps
//             (cache-feedback.ts), or a run of zero-cached reports on hits the index predicted beyond
//             the feedback's rounding slack (engine-restart.ts). Both are judged against the index's
//             own prediction; the accuracy window records the decision's.
//   metrics   on each engine scrape: clear the replica's routes when the engine restarted, and size
//             its part of the index to the engine's KV capacity (the operator's override wins).
//
// Capacity to budget: an engine's prefix cache lives in its KV pool, so a replica can hold at most
// capacityTokens / tokensPerBlock of this LB's blocks. That is an upper bound: running requests and
// other LBs' traffic take part of the pool, which the horizon feedback accounts for.

import { applyCacheReport, captureDispatch, type CachedTokensReport, type DispatchSnapshot, type FeedbackResult } from "./cache-feedback";
import { RoutingInputError, describe } from "./errors";
import { engineRestarted, mergeEpoch, ZeroCachedRun, type EngineEpoch } from "./engine-restart";
import { PredictionWindow, type PredictionWindowStats } from "./prediction-window";
import type { PrefixIndex } from "./prefix-index";
import type { CapacitySource, Decision, IndexClearReason, RequestView } from "./types";
import { usageNumber } from "./usage";

type ClearReason = IndexClearReason;

/** What the LB reads from one engine scrape for the cache model; either part may be unknown. */
export interface EngineCacheScrape {
  /** KV pool size in tokens, or null when the metrics do not say. */
  capacityTokens: number | null;
  /** True when the capacity is (or, null, could not be) estimated from a rounded usage gauge (SGLang
   * without max_total_num_tokens) rather than stated by the engine: the largest estimate stands until
   * the engine restarts (engineMetrics). */
  capacityEstimated?: boolean;
  epoch: EngineEpoch | null;
}

export interface ReplicaCacheState extends PredictionWindowStats {
  /** The rolling window the accuracy is taken over. */
  windowMs: number;
  /** Whether responses in the window carried cached-token counts: false when none did (the engine
   * was started without cache reports), null before any completion. */
  cachedTokensReported: boolean | null;
  /** KV capacity in tokens in force and where it came from. */
  capacityTokens: number | null;
  capacitySource: CapacitySource | null;
  /** The replica's route budget and horizon in the index, and its routes now. */
  budgetBlocks: number | null;
  horizonMs: number | null;
  routes: number;
  /** Times this LB cleared the replica's routes, and the last time and why. */
  clears: number;
  lastClearAt: number | null;
  lastClearReason: ClearReason | null;
}

export interface ReportOutcome {
  feedback: FeedbackResult;
  /** Set when this report showed the replica's cache was emptied and its routes were cleared. */
  cleared: boolean;
}

interface ReplicaTruth {
  window: PredictionWindow;
  epoch: EngineEpoch | null;
  scrapedCapacity: number | null;
  /** Whether scrapedCapacity is an estimate (EngineCacheScrape.capacityEstimated). */
  capacityEstimated: boolean;
  overrideCapacity: number | null;
  clears: number;
  lastClearAt: number | null;
  lastClearReason: ClearReason | null;
}

export interface CacheTruthOptions {
  /** Rolling accuracy window (default 1 min). */
  windowMs?: number;
}

function checkCapacity(field: string, tokens: unknown): number | null {
  if (tokens === null) return null;
  if (typeof tokens !== "number" || !Number.isFinite(tokens) || tokens < 0) {
    throw new RoutingInputError(field, `must be a finite number of tokens >= 0 or null, got ${describe(tokens)}`);
  }
  return tokens;
}

export class CacheTruth {
  private readonly replicas = new Map<string, ReplicaTruth>();
  private readonly zeroRuns = new ZeroCachedRun();
  private readonly windowMs: number | undefined;

  constructor(
    private index: PrefixIndex,
    options: CacheTruthOptions = {},
  ) {
    this.windowMs = options.windowMs;
  }

  /** Snapshot of the index's view of the chosen replica, to hand back with the request's usage. */
  dispatch(view: RequestView, decision: Decision, now: number): DispatchSnapshot {
    return captureDispatch(this.index, view, decision, now);
  }

  /** A response's usage arrived (possibly without, or with malformed, cached tokens). */
  report(snap: DispatchSnapshot, usage: CachedTokensReport | null, now: number): ReportOutcome {
    const truth = this.replica(snap.replicaId);
    // A request dispatched before the replica was cleared reports on the cache that was cleared.
    const stale = truth.lastClearAt !== null && snap.dispatchedAt <= truth.lastClearAt;
    const feedback = applyCacheReport(this.index, snap, usage ?? { cachedTokens: null }, now, stale);
    const cached = feedback.verdict === "unreported" ? null : usageNumber(usage?.cachedTokens);
    // The accuracy figures measure the decision's prediction (the policy's, where it keeps its own state).
    truth.window.add(now, snap.decisionTokens, cached === null ? null : (feedback.reportedTokens ?? cached));
    if (stale) return { feedback, cleared: false };
    // Only a zero on the index's own prediction beyond the rounding slack ("lower") says the engine lost
    // what the index holds; a zero within it (one block predicted, none served after the engine's page
    // alignment), or one only a peer policy's state predicted, neither extends nor breaks the run.
    const zeroRun = this.zeroRuns.observe(snap.replicaId, feedback.verdict === "lower" ? snap.predictedTokens : 0, cached);
    const cleared = feedback.cacheLost || zeroRun;
    if (cleared) this.clear(snap.replicaId, now, "cache-lost");
    return { feedback, cleared };
  }

  /** One engine scrape: restart detection and the capacity budget. Returns whether it restarted. */
  engineMetrics(replicaId: string, scrape: EngineCacheScrape, tokensPerBlock: number, now: number): { restarted: boolean } {
    const truth = this.replica(replicaId);
    let restarted = false;
    if (scrape.epoch !== null) {
      restarted = engineRestarted(truth.epoch, scrape.epoch);
      // Merged, not replaced: a series (or the start time) one scrape lacked keeps its last value to
      // compare the next scrape with. A restart starts the memory over with the new process.
      truth.epoch = restarted || truth.epoch === null ? scrape.epoch : mergeEpoch(truth.epoch, scrape.epoch);
      if (restarted) this.clear(replicaId, now, "engine-restart");
    }
    const capacity = checkCapacity("capacityTokens", scrape.capacityTokens ?? null);
    // An estimated capacity moves with the rounding of the gauge it comes from while the engine's pool
    // does not: within one engine process the largest estimate stands (a missing one keeps it), so a
    // low reading never shrinks the budget and evicts routes the engine still holds. A restart, or the
    // engine stating its pool, replaces it.
    const estimated = scrape.capacityEstimated === true;
    const keep = estimated && truth.capacityEstimated && !restarted && truth.scrapedCapacity !== null;
    truth.scrapedCapacity = keep ? Math.max(truth.scrapedCapacity ?? 0, capacity ?? 0) : capacity;
    truth.capacityEstimated = estimated;
    this.applyBudget(replicaId, truth, tokensPerBlock);
    return { restarted };
  }

  /** The operator's KV capacity for a replica (LbConfig), or null to go back to the engine's metrics. */
  setCapacityOverride(replicaId: string, tokens: number | null, tokensPerBlock: number): void {
    const truth = this.replica(replicaId);
    truth.overrideCapacity = checkCapacity("capacityTokens", tokens);
    this.applyBudget(replicaId, truth, tokensPerBlock);
  }

  /**
   * The LB rebuilt its index (a new index.capacityBlocks or ttlMs): what it knows of each engine
   * carries over to the new one. Budgets from the engines' KV capacity and learned horizons are
   * properties of the engines, not of the index, and epochs, accuracy windows and clear history
   * stay: starting them over left a replica without a budget (and its restarts undetected) until
   * its next scrape. `tokensPerBlock` sizes the budgets as engineMetrics does.
   */
  rebind(index: PrefixIndex, tokensPerBlock: number): void {
    const previous = this.index;
    this.index = index;
    for (const [replicaId, truth] of this.replicas) {
      index.setReplicaHorizon(replicaId, previous.replicaView(replicaId).horizonMs);
      this.applyBudget(replicaId, truth, tokensPerBlock);
    }
  }

  /** Drops the replica's routes and horizon (its cache is known to be empty). */
  clear(replicaId: string, now: number, reason: ClearReason): void {
    const truth = this.replica(replicaId);
    this.index.removeReplica(replicaId);
    this.index.setReplicaHorizon(replicaId, null);
    this.zeroRuns.reset(replicaId);
    truth.clears++;
    truth.lastClearAt = now;
    truth.lastClearReason = reason;
  }

  /** Forgets a replica removed from the LB's config. */
  removeReplica(replicaId: string): void {
    this.replicas.delete(replicaId);
    this.zeroRuns.reset(replicaId);
    this.index.removeReplica(replicaId);
    this.index.setReplicaBudget(replicaId, null);
    this.index.setReplicaHorizon(replicaId, null);
  }

  state(replicaId: string, now: number): ReplicaCacheState {
    const truth = this.replica(replicaId);
    const stats = truth.window.stats(now);
    const view = this.index.replicaView(replicaId);
    const capacity = truth.overrideCapacity ?? truth.scrapedCapacity;
    return {
      ...stats,
      windowMs: truth.window.windowMs,
      cachedTokensReported: stats.reports + stats.unreported === 0 ? null : stats.reports > 0,
      capacityTokens: capacity,
      capacitySource: truth.overrideCapacity !== null ? "override" : truth.scrapedCapacity !== null ? "metrics" : null,
      budgetBlocks: view.budget,
      horizonMs: view.horizonMs,
      routes: view.routes,
      clears: truth.clears,
      lastClearAt: truth.lastClearAt,
      lastClearReason: truth.lastClearReason,
    };
  }

  private applyBudget(replicaId: string, truth: ReplicaTruth, tokensPerBlock: number): void {
    if (!(typeof tokensPerBlock === "number" && tokensPerBlock > 0 && Number.isFinite(tokensPerBlock))) {
      throw new RoutingInputError("tokensPerBlock", `must be a positive number, got ${describe(tokensPerBlock)}`);
    }
    const capacity = truth.overrideCapacity ?? truth.scrapedCapacity;
    const budget = capacity === null ? null : Math.floor(capacity / tokensPerBlock);
    if (budget !== this.index.replicaView(replicaId).budget) this.index.setReplicaBudget(replicaId, budget);
  }

  private replica(replicaId: string): ReplicaTruth {
    let truth = this.replicas.get(replicaId);
    if (truth === undefined) {
      truth = {
        window: new PredictionWindow(this.windowMs),
        epoch: null,
        scrapedCapacity: null,
        capacityEstimated: false,
        overrideCapacity: null,
        clears: 0,
        lastClearAt: null,
        lastClearReason: null,
      };
      this.replicas.set(replicaId, truth);
    }
    return truth;
  }
}
