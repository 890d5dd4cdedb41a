// The scripted scenarios both LB drivers run: the proxy (packages/proxy/test/scenario.test.ts, real
// HTTP against scripted engines) and the simulator's LB model (packages/sim/test/scenario.test.ts,
// virtual time). Exported as `@meridian/lb-core/testing`. The format is in src/scenario.ts.
import type { LbScenario } from "../../src/scenario";

export * from "../../src/scenario";

// Prompts long enough to span several 64-character blocks; r3 continues r1's conversation, so the
// replica that served r1 is predicted to hold r3's shared prefix.
const FIRST = "Plan a three-day walking tour of Lisbon with one museum a day.";
const FOLLOW_UP = `${FIRST} Now swap the museums for gardens and add a food market.`;

/** direct mode (gorgo): route by cost, hold when every replica is full, refuse past the queue bound,
 * drain in FIFO order when a replica frees, refuse a model no enabled replica serves. */
export const DIRECT: LbScenario = {
  name: "direct: route, hold, drain, queue full, no replica",
  mode: "direct",
  policy: "gorgo",
  seed: 7,
  limits: { queueMaxLength: 1, queueMaxWaitMs: 60_000 },
  lbs: [
    {
      id: "lb-us",
      region: "us",
      replicas: [
        { id: "us-1", region: "us", rttMs: 0 },
        { id: "eu-1", region: "eu", rttMs: 150 },
        { id: "us-old", region: "us", rttMs: 0, model: "retired-model", state: "draining" },
      ],
    },
  ],
  steps: [
    { send: "r1", lb: "lb-us", text: FIRST, expect: ["lb-us r1 replica us-1"] },
    { load: "us-1", running: 1, waiting: 1 },
    { send: "r2", lb: "lb-us", text: "Summarise the rules of cricket for a child.", expect: ["lb-us r2 replica eu-1"] },
    { load: "eu-1", running: 1, waiting: 1 },
    { send: "r3", lb: "lb-us", text: FOLLOW_UP, expect: ["lb-us r3 hold"] },
    { send: "r4", lb: "lb-us", text: "Translate 'good morning' into five languages.", expect: ["lb-us r4 fail queue_full"] },
    { finish: "r1" },
    { load: "us-1", running: 0, waiting: 0, expect: ["lb-us r3 replica us-1"] },
    { send: "r5", lb: "lb-us", text: "Anything at all.", model: "retired-model", expect: ["lb-us r5 fail no_replica"] },
    { finish: "r2" },
    { finish: "r3" },
  ],
};

/** direct mode: a held request past the wait bound is refused (503 queue_timeout). */
export const DIRECT_WAIT: LbScenario = {
  name: "direct: wait exceeded",
  mode: "direct",
  policy: "least-request",
  seed: 7,
  limits: { queueMaxLength: 4, queueMaxWaitMs: 300 },
  lbs: [{ id: "lb-us", region: "us", replicas: [{ id: "us-1", region: "us", rttMs: 0 }] }],
  steps: [
    { load: "us-1", running: 1, waiting: 1 },
    { send: "r1", lb: "lb-us", text: "Hold me until the bound passes.", expect: ["lb-us r1 hold"] },
    { wait: "expiry", expect: ["lb-us r1 fail queue_timeout"] },
  ],
};

/** via-peer mode (SkyLB): local first; forward to an available peer once (hop 1 is never forwarded
 * again); hold when neither local replicas nor peers are available; each LB drains its own queue. */
export const VIA_PEER: LbScenario = {
  name: "via-peer: route, forward, hold, drain",
  mode: "via-peer",
  policy: "least-request",
  seed: 7,
  limits: { queueMaxLength: 4, queueMaxWaitMs: 60_000, peerQueueTau: 4 },
  lbs: [
    { id: "lb-us", region: "us", replicas: [{ id: "us-1", region: "us", rttMs: 0 }] },
    { id: "lb-eu", region: "eu", replicas: [{ id: "eu-1", region: "eu", rttMs: 0 }] },
  ],
  steps: [
    { send: "r1", lb: "lb-us", text: FIRST, expect: ["lb-us r1 replica us-1"] },
    { load: "us-1", running: 1, waiting: 1 },
    { send: "r2", lb: "lb-us", text: "Name three rivers in Africa.", expect: ["lb-us r2 peer lb-eu", "lb-eu r2 replica eu-1"] },
    { load: "eu-1", running: 1, waiting: 1 },
    { send: "r3", lb: "lb-us", text: FOLLOW_UP, expect: ["lb-us r3 hold"] },
    { send: "r4", lb: "lb-eu", text: "List the noble gases.", expect: ["lb-eu r4 hold"] },
    { finish: "r2" },
    { load: "eu-1", running: 0, waiting: 0, expect: ["lb-eu r4 replica eu-1"] },
    { finish: "r1" },
    { load: "us-1", running: 0, waiting: 0, expect: ["lb-us r3 replica us-1"] },
    { finish: "r3" },
    { finish: "r4" },
  ],
};

export const SCENARIOS: readonly LbScenario[] = [DIRECT, DIRECT_WAIT, VIA_PEER];
