// The fleet simulator's entry point: simulateFleet() runs one policy over a workload on a fleet, on a
// virtual clock, and summarizes it. The parts: the event loop (event-loop.ts: clients, network,
// engines), the LB model (lb-driver.ts: one @meridian/lb-core LbCore per LB, the same core the proxy
// runs), the tuner path (tuner-driver.ts: telemetry → @meridian/tuner → config push) and the per-request
// records (records.ts). Nothing here decides where a request goes.
import type { PolicyName } from "@meridian/routing";
import { FleetRun } from "./event-loop";
import type { FleetRunOptions } from "./run-options";
import { validateFleetSpec, type FleetSpec } from "./spec";
import { summarize, type FleetSummary, type RefusedRecord, type ReplicaScrapeStats, type RequestRecord } from "./summary";
import type { TunerReport } from "./tuner-driver";
import type { SimRequest } from "./workload";

export type { TunerReport, TunerRunOptions, TunerScope, TunerTrajectoryPoint } from "./tuner-driver";
export { mixSeed } from "./seeds";
export type { DecisionTrace, FleetRunOptions } from "./run-options";

export interface FleetRunResult {
  label: string;
  policy: PolicyName;
  summary: FleetSummary;
  tuners: TunerReport[];
  /** With `recordRequests`: the served requests, in completion order. */
  records?: RequestRecord[];
  /** With `recordRequests`: the refused requests, in the order their clients got the refusal. */
  refused?: RefusedRecord[];
}

function runOnce(spec: FleetSpec, requests: readonly SimRequest[], options: FleetRunOptions): FleetRun {
  const problems = validateFleetSpec(spec);
  if (problems.length > 0) throw new Error(`invalid fleet spec ${spec.name}: ${problems.join("; ")}`);
  if (options.tuner && options.policy !== "gorgo") throw new Error(`the online tuner tunes gorgo weights; policy ${options.policy} has none`);
  const run = new FleetRun(spec, requests, options);
  run.run();
  return run;
}

function replicaStatsOf(run: FleetRun): ReplicaScrapeStats[] {
  return run.replicas.map((r) => ({ id: r.id, scrapes: r.scrapes, scrapesWithWaiting: r.scrapesWithWaiting }));
}

/** Runs one policy over a workload on a fleet. Deterministic for (spec, requests, options). */
export function simulateFleet(spec: FleetSpec, requests: readonly SimRequest[], options: FleetRunOptions): FleetRunResult {
  const run = runOnce(spec, requests, options);
  const { records } = run;
  const label = options.label ?? options.policy;
  const result: FleetRunResult = {
    label,
    policy: options.policy,
    summary: summarize(label, records.served, replicaStatsOf(run), records.refused),
    tuners: run.tuners.flatMap((t) => (t ? [t.report()] : [])),
  };
  if (options.recordRequests) {
    result.records = records.served;
    result.refused = records.refused;
  }
  return result;
}

/**
 * The same workload run once under each of `seeds` (the engines' timing jitter and the LBs'
 * tie-breaks), summarized over every run's requests pooled. Near a busy load one run says more about
 * its seed than about the configuration (packages/tuner/README.md, "Evaluation"); percentiles, shares
 * and hit rates over the pool do not. Rates per second count every run in one arrival span: they are
 * `seeds.length` times one run's. With one seed, the summary is simulateFleet's.
 */
export function simulateFleetOverSeeds(
  spec: FleetSpec,
  requests: readonly SimRequest[],
  options: Omit<FleetRunOptions, "seed" | "tuner" | "recordRequests">,
  seeds: readonly number[],
): FleetSummary {
  if (seeds.length === 0) throw new Error("simulateFleetOverSeeds needs at least one seed");
  const served: RequestRecord[] = [];
  const refused: RefusedRecord[] = [];
  const scrapes = new Map<string, ReplicaScrapeStats>();
  for (const seed of seeds) {
    const run = runOnce(spec, requests, { ...options, seed });
    // One by one: spread into push's arguments, a run of more than ~125k records overflows the stack.
    for (const r of run.records.served) served.push(r);
    for (const r of run.records.refused) refused.push(r);
    for (const r of replicaStatsOf(run)) {
      const sum = scrapes.get(r.id) ?? { id: r.id, scrapes: 0, scrapesWithWaiting: 0 };
      scrapes.set(r.id, { id: r.id, scrapes: sum.scrapes + r.scrapes, scrapesWithWaiting: sum.scrapesWithWaiting + r.scrapesWithWaiting });
    }
  }
  return summarize(options.label ?? options.policy, served, [...scrapes.values()], refused);
}
