// The fleet the simulator runs: regions, the RTT matrix between them, engine replicas and regional
// load balancers. Plain data so it can come from a preset, a JSON file or the console.

import type { LbConfig } from "@meridian/protocol";
import type { CrossRegionMode, PolicyName, Weights } from "@meridian/routing";
import type { EngineParams } from "../engine";

export interface ReplicaSpec {
  id: string;
  region: string;
  /** Overrides on top of the fleet's default engine parameters. */
  engine?: Partial<EngineParams>;
}

export interface LbSpec {
  id: string;
  region: string;
  /** Defaults to the fleet's policy when absent. */
  policy?: PolicyName;
  weights?: Weights;
  crossRegion?: CrossRegionMode;
  /**
   * A trial the LB runs for the whole run, with no tuner deciding it: a share of sessions routed with
   * the candidate's weights, the rest with `weights`. How the interference between a trial's arms is
   * measured (scripts/bench/tuner-interference.ts). Ignored on an LB that a tuner drives.
   */
  trial?: NonNullable<LbConfig["trial"]>;
}

export interface FleetSpec {
  name: string;
  regions: string[];
  /** Symmetric round-trip times in ms; rttMs[a][b] for every pair, including a region to itself. */
  rttMs: Record<string, Record<string, number>>;
  /** Default engine parameters for every replica (each replica may override). */
  engine: EngineParams;
  replicas: ReplicaSpec[];
  lbs: LbSpec[];
  /** RTT between a client and the LB of its own region (the paper's clients ran beside the proxy: ~0). */
  localClientRttMs: number;
  /** Share of clients per region (need not sum to 1); requests are assigned by conversation root. */
  clientRegionWeights: Record<string, number>;
  /** Cap on generated tokens per request (the paper ran SGLang with max output 128). */
  maxOutputTokens: number;
  /** Requests with more prompt tokens than this are dropped, as the paper filtered > 24k. null keeps all. */
  maxInputTokens: number | null;
  /** RTT probe interval per LB→replica pair (paper 30 s; the live default is 5 s). */
  probeIntervalMs: number;
  /** Engine metrics scrape interval (paper 30 s). */
  scrapeIntervalMs: number;
  /** How often LBs exchange in-flight tokens per replica with their peers. */
  peerSyncIntervalMs: number;
  /** Relative jitter on each RTT probe sample, e.g. 0.05 = ±5 %. */
  rttJitter: number;
  /** Prefix index bounds per LB. */
  index: { capacityBlocks: number; ttlMs: number };
  /** The LBs' hold-queue bounds and SkyLB τ; absent fields take the live defaults (LbConfig limits). */
  lbLimits?: { queueMaxLength?: number; queueMaxWaitMs?: number; peerQueueTau?: number };
}

/** RTT between two regions; throws on a region pair the spec does not define. */
export function rttBetween(spec: FleetSpec, a: string, b: string): number {
  const value = spec.rttMs[a]?.[b] ?? spec.rttMs[b]?.[a];
  if (value === undefined) throw new Error(`fleet ${spec.name}: no RTT between ${a} and ${b}`);
  return value;
}

/** Checks the spec's internal references; returns a list of problems (empty when valid). */
export function validateFleetSpec(spec: FleetSpec): string[] {
  const problems: string[] = [];
  const regions = new Set(spec.regions);
  for (const a of spec.regions) {
    for (const b of spec.regions) {
      const v = spec.rttMs[a]?.[b] ?? spec.rttMs[b]?.[a];
      if (v === undefined || !(v >= 0)) problems.push(`rtt ${a}→${b} missing or negative`);
    }
  }
  const replicaIds = new Set<string>();
  for (const r of spec.replicas) {
    if (!regions.has(r.region)) problems.push(`replica ${r.id}: unknown region ${r.region}`);
    if (replicaIds.has(r.id)) problems.push(`replica ${r.id}: duplicate id`);
    replicaIds.add(r.id);
  }
  if (spec.replicas.length === 0) problems.push("no replicas");
  if (spec.lbs.length === 0) problems.push("no load balancers");
  for (const lb of spec.lbs) {
    if (!regions.has(lb.region)) problems.push(`lb ${lb.id}: unknown region ${lb.region}`);
  }
  let weightSum = 0;
  for (const [region, w] of Object.entries(spec.clientRegionWeights)) {
    if (!regions.has(region)) problems.push(`client region ${region} is not a fleet region`);
    if (!(w >= 0)) problems.push(`client region ${region}: weight must be ≥ 0`);
    weightSum += w;
  }
  if (!(weightSum > 0)) problems.push("client region weights must have a positive sum");
  if (!(spec.maxOutputTokens >= 1)) problems.push("maxOutputTokens must be ≥ 1");
  for (const [name, v] of [
    ["probeIntervalMs", spec.probeIntervalMs],
    ["scrapeIntervalMs", spec.scrapeIntervalMs],
    ["peerSyncIntervalMs", spec.peerSyncIntervalMs],
  ] as const) {
    if (!(v > 0)) problems.push(`${name} must be > 0`);
  }
  return problems;
}

/** The LB that serves clients of `region`: the one in that region, else the nearest by RTT. */
export function entryLbFor(spec: FleetSpec, region: string): LbSpec {
  let best: LbSpec | undefined;
  let bestRtt = Infinity;
  for (const lb of spec.lbs) {
    const rtt = lb.region === region ? -1 : rttBetween(spec, region, lb.region);
    if (rtt < bestRtt) {
      best = lb;
      bestRtt = rtt;
    }
  }
  if (!best) throw new Error(`fleet ${spec.name}: no load balancer`);
  return best;
}
