// The demo fleet's model name and network: what `npm start`'s engines serve and emulate, and what
// meridian-engine assumes when --model / --rtt-matrix are not given, so that an engine started by
// hand joins the demo as one of its own (issue 15 item 11). The console's demo topology
// (apps/console/src/lib/demo-topology.ts) takes both from here, through @meridian/sim/demo-network.

/** The model the demo's engines serve and its clients ask for. */
export const DEMO_MODEL = "meridian-demo";

/** Region RTTs in ms: GORGO's Figure 2 from Ashburn (37, 292, 464); every region reaches its own
 * replicas in 37 ms, and Frankfurt <-> Seoul is 1.1 x Ashburn <-> Seoul, as in the simulator's
 * `paper` preset (see the package README, "RTT matrix"). */
export const DEMO_RTT_MS = {
  "us-ashburn": { "us-ashburn": 37, "eu-frankfurt": 292, "ap-seoul": 464 },
  "eu-frankfurt": { "us-ashburn": 292, "eu-frankfurt": 37, "ap-seoul": 510 },
  "ap-seoul": { "us-ashburn": 464, "eu-frankfurt": 510, "ap-seoul": 37 },
} as const satisfies Record<string, Record<string, number>>;
