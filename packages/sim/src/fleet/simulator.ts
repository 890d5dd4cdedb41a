// The fleet simulator's entry point: simulateFleet() runs one policy over a workload on a fleet, on a
// virtual clock, and summarizes it. The parts: the event loop (event-loop.ts: clients, network,
// engines), the LB model (lb-driver.ts: one @meridian/lb-core LbCore per LB, the same core the proxy
// runs), the tuner path (tuner-driver.ts: telemetry → @meridian/tuner → config push) and the per-request
// records (records.ts). Nothing here decides where a request goes.
import type { PolicyName } from "@meridian/routing";
import { FleetRun } from "./event-loop";
import type { FleetRunOptions } from "./run-options";
import { validateFleetSpec, type FleetSpec } from "./spec";
import { summarize, type FleetSummary, type RequestRecord } from "./summary";
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
  /** Served requests, in completion order. */
  records?: RequestRecord[];
}

/** Runs one policy over a workload on a fleet. Deterministic for (spec, requests, options). */
export function simulateFleet(spec: FleetSpec, requests: readonly SimRequest[], options: FleetRunOptions): FleetRunResult {
  const problems = validateFleetSpec(spec);
  if (problems.length > 0) throw new Error(`invalid fleet spec ${spec.name}: ${problems.join("; ")}`);
  if (options.tuner && options.policy !== "gorgo") throw new Error(`the online tuner tunes gorgo weights; policy ${options.policy} has none`);
  const run = new FleetRun(spec, requests, options);
  run.run();
  const { records } = run;
  const label = options.label ?? options.policy;
  const replicaStats = run.replicas.map((r) => ({ id: r.id, scrapes: r.scrapes, scrapesWithWaiting: r.scrapesWithWaiting }));
  const result: FleetRunResult = {
    label,
    policy: options.policy,
    summary: summarize(label, records.served, replicaStats, records.refused),
    tuners: run.tuners.flatMap((t) => (t ? [t.report()] : [])),
  };
  if (options.recordRequests) result.records = records.served;
  return result;
}
