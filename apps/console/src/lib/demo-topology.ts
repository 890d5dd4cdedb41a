// The demo fleet's topology, shared by the console (which seeds it into the DB in demo mode) and
// scripts/demo-fleet.ts (which starts the processes). Plain data: no server-only imports.
//
// Ports, from a base port B (default 4100):
//   engines  B+1 .. B+6   (two per region)
//   LBs      B+11 .. B+13 (one meridian-proxy per region)

import type { EngineKind } from "@meridian/routing/types";
import { DEMO_MODEL as SIM_DEMO_MODEL, DEMO_RTT_MS as SIM_DEMO_RTT_MS } from "@meridian/sim/demo-network";

export const DEMO_REGIONS = ["us-ashburn", "eu-frankfurt", "ap-seoul"] as const;
export type DemoRegion = (typeof DEMO_REGIONS)[number];

export const DEMO_DISPLAY_NAMES: Record<DemoRegion, string> = {
  "us-ashburn": "US East (Ashburn)",
  "eu-frankfurt": "EU Central (Frankfurt)",
  "ap-seoul": "AP Northeast (Seoul)",
};

/** Region RTTs in ms and the model name: the engines' own defaults (meridian-engine), so the
 * console's seeded RTTs, the fleet's engines and an engine started by hand agree. */
export const DEMO_RTT_MS: Record<DemoRegion, Record<DemoRegion, number>> = SIM_DEMO_RTT_MS;
export const DEMO_MODEL = SIM_DEMO_MODEL;

export interface DemoEngine {
  id: string;
  name: string;
  region: DemoRegion;
  port: number;
  url: string;
  engine: EngineKind;
  homeLbId: string;
}

export interface DemoLb {
  id: string;
  name: string;
  region: DemoRegion;
  port: number;
  url: string;
}

export interface DemoTopology {
  host: string;
  engines: DemoEngine[];
  lbs: DemoLb[];
}

export function demoTopology(basePort = 4100, host = "127.0.0.1"): DemoTopology {
  const lbs: DemoLb[] = DEMO_REGIONS.map((region, r) => ({
    id: `lb-${region}`,
    name: `lb-${region}`,
    region,
    port: basePort + 11 + r,
    url: `http://${host}:${basePort + 11 + r}`,
  }));
  const engines: DemoEngine[] = DEMO_REGIONS.flatMap((region, r) =>
    ["a", "b"].map((suffix, i) => {
      const port = basePort + 1 + r * 2 + i;
      return {
        id: `${region}-${suffix}`,
        name: `${region}-${suffix}`,
        region,
        port,
        url: `http://${host}:${port}`,
        // One of each dialect per region, so both metric vocabularies are exercised.
        engine: i === 0 ? ("sglang" as const) : ("vllm" as const),
        homeLbId: `lb-${region}`,
      };
    }),
  );
  return { host, engines, lbs };
}
