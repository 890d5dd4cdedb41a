// Named fleet presets. `paper` stands in for GORGO's deployment (gorgo.txt §4): one proxy in
// us-ashburn with its clients beside it, one SGLang replica in each of us-ashburn, eu-frankfurt and
// ap-seoul, max 64 running requests, max output 128, metrics scraped and RTT probed every 30 s.
// Calibration of the prefill rate is documented in packages/sim/README.md.

import { PAPER_ENGINE_PARAMS } from "../engine";
import type { FleetSpec } from "./spec";

export const PAPER_REGIONS = ["us-ashburn", "eu-frankfurt", "ap-seoul"] as const;

/**
 * RTTs in ms. From Ashburn: the paper's Figure 2 means (37, 292, 464). The paper measured nothing
 * else; the other pairs scale the public inter-region latencies by the same HTTP-probe overhead:
 * Frankfurt↔Seoul ≈ 1.1 × Ashburn↔Seoul, and every region reaches its own replica in 37 ms as
 * Ashburn does.
 */
export const PAPER_RTT_MS: Record<string, Record<string, number>> = {
  "us-ashburn": { "us-ashburn": 37, "eu-frankfurt": 292, "ap-seoul": 464 },
  "eu-frankfurt": { "us-ashburn": 292, "eu-frankfurt": 37, "ap-seoul": 510 },
  "ap-seoul": { "us-ashburn": 464, "eu-frankfurt": 510, "ap-seoul": 37 },
};

/**
 * Prefill tokens/s per replica, calibrated so `meridian-sim sweep` on the Mooncake conversation trace
 * saturates the baselines at time_scale 1 and clears them by 3 (README.md, "Calibration").
 */
export const PAPER_PREFILL_TOKENS_PER_SEC = 13_500;

export function paperFleet(): FleetSpec {
  return {
    name: "paper",
    regions: [...PAPER_REGIONS],
    rttMs: PAPER_RTT_MS,
    engine: { ...PAPER_ENGINE_PARAMS, prefillTokensPerSec: PAPER_PREFILL_TOKENS_PER_SEC },
    replicas: PAPER_REGIONS.map((region) => ({ id: region, region })),
    lbs: [{ id: "lb-us-ashburn", region: "us-ashburn", crossRegion: "direct" }],
    localClientRttMs: 0,
    // The paper's workload ran beside the single Ashburn proxy.
    clientRegionWeights: { "us-ashburn": 1 },
    maxOutputTokens: 128,
    maxInputTokens: null,
    probeIntervalMs: 30_000,
    scrapeIntervalMs: 30_000,
    peerSyncIntervalMs: 1_000,
    rttJitter: 0.05,
    index: { capacityBlocks: 1_000_000, ttlMs: 3_600_000 },
  };
}

/** Three regions with an LB and clients in each (SkyLB-style); otherwise the paper's numbers. */
export function globalFleet(): FleetSpec {
  const paper = paperFleet();
  return {
    ...paper,
    name: "global",
    lbs: PAPER_REGIONS.map((region) => ({ id: `lb-${region}`, region, crossRegion: "direct" as const })),
    clientRegionWeights: { "us-ashburn": 1, "eu-frankfurt": 1, "ap-seoul": 1 },
    probeIntervalMs: 5_000,
    scrapeIntervalMs: 5_000,
  };
}

export const PRESETS: Record<string, () => FleetSpec> = {
  paper: paperFleet,
  global: globalFleet,
};

export function presetNames(): string[] {
  return Object.keys(PRESETS);
}
