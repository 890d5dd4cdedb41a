// Prometheus series for how well the LB's prefix index matches what each replica's engine holds
// (@meridian/routing cache-truth.ts): accuracy over the rolling window, whether the engine reports
// cached tokens at all, the replica's part of the index (routes, budget, horizon) and the times it
// was cleared. Computed at scrape time from the LB core; clears are counted as they happen.
import { Counter, Gauge, type Registry } from "prom-client";
import type { ReplicaCacheState } from "@meridian/protocol";
import { INDEX_CLEAR_REASONS, type IndexClearReason } from "@meridian/routing";

export type CacheStates = () => { id: string; cache: ReplicaCacheState }[];

/** A gauge with one series per replica, read at scrape time from `rows`. Reset first, so a replica
 * that left the config leaves no stale series; a null value has no series (unknown is not 0). */
export function replicaGauge<Row extends { id: string }>(
  registry: Registry,
  name: string,
  help: string,
  rows: () => readonly Row[],
  value: (row: Row) => number | null,
): Gauge<"replica"> {
  return new Gauge({
    name,
    help,
    labelNames: ["replica"],
    registers: [registry],
    collect() {
      this.reset();
      for (const row of rows()) {
        const v = value(row);
        if (v !== null) this.set({ replica: row.id }, v);
      }
    },
  });
}

export class CacheMetrics {
  private readonly clears: Counter<"replica" | "reason">;

  constructor(registry: Registry, states: CacheStates) {
    const perReplica = (name: string, help: string, value: (cache: ReplicaCacheState) => number | null) =>
      replicaGauge(registry, name, help, states, ({ cache }) => value(cache));
    perReplica(
      "meridian_lb_replica_prediction_accuracy_ratio",
      "Sum of min(predicted, reported) over sum of max(predicted, reported) cached tokens, per replica, over the last minute (1 = exact; absent without reports).",
      (c) => c.accuracy,
    );
    perReplica(
      "meridian_lb_replica_cached_tokens_reported",
      "1 when the replica's responses carry usage.prompt_tokens_details.cached_tokens, 0 when none in the window did (vLLM needs --enable-prompt-tokens-details, SGLang --enable-cache-report).",
      (c) => (c.cachedTokensReported === null ? null : c.cachedTokensReported ? 1 : 0),
    );
    perReplica("meridian_lb_replica_index_routes", "Prefix-index routes (blocks) this LB holds for the replica.", (c) => c.routes);
    perReplica(
      "meridian_lb_replica_index_budget_blocks",
      "The replica's route budget in the prefix index: its engine's KV capacity in blocks (absent when unknown).",
      (c) => c.budgetBlocks,
    );
    perReplica(
      "meridian_lb_replica_index_horizon_seconds",
      "How long the replica's engine keeps a block, as learned from its cached-token reports (absent until a report contradicts the TTL).",
      (c) => (c.horizonMs === null ? null : c.horizonMs / 1000),
    );
    this.clears = new Counter({
      name: "meridian_lb_replica_index_clears_total",
      help: "Times the LB cleared a replica's part of its prefix index, by reason (engine-restart, cache-lost, operator).",
      labelNames: ["replica", "reason"],
      registers: [registry],
      // At 0 for each configured replica, so its first clear shows in increase() (bounded: replicas
      // times the fixed reasons).
      collect() {
        for (const { id } of states()) for (const reason of INDEX_CLEAR_REASONS) this.inc({ replica: id, reason }, 0);
      },
    });
  }

  cleared(replicaId: string, reason: IndexClearReason): void {
    this.clears.inc({ replica: replicaId, reason });
  }
}
