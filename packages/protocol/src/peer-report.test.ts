// What a peer LB may claim: the LB adds a peer's in-flight tokens to its own view of a replica's queue,
// so a report must not be able to push that sum out of the finite range the policies accept.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { MAX_PEER_TOKENS, PEER_REPORT_SCHEMA, safeParsePeerReport } from "./peer-report";

const report = (replicas: unknown[]) => ({
  schema: PEER_REPORT_SCHEMA,
  lbId: "lb-eu",
  region: "eu-frankfurt",
  time: 1_000,
  configVersion: 3,
  replicas,
  queueLength: 0,
  availableReplicas: 1,
});
const load = (id: string, inFlightTokens: number) => ({ id, inFlight: 1, inFlightTokens, full: false });

test("a peer report within bounds parses", () => {
  const parsed = safeParsePeerReport(report([load("eu-1", 12_000), load("us-1", MAX_PEER_TOKENS)]));
  assert.ok(parsed.success);
  assert.equal(parsed.data.replicas[0]?.pendingPrefillTokens, 0);
});

test("absurd token counts and a replica listed twice are refused, naming the field", () => {
  const huge = safeParsePeerReport(report([load("eu-1", 1e308)]));
  assert.ok(!huge.success);
  assert.match(huge.error.message, /peerReport\.replicas\[0\]\.inFlightTokens/);
  const prefill = safeParsePeerReport(report([{ ...load("eu-1", 1), pendingPrefillTokens: MAX_PEER_TOKENS * 2 }]));
  assert.ok(!prefill.success);
  const twice = safeParsePeerReport(report([load("eu-1", 5), load("eu-1", 5)]));
  assert.ok(!twice.success);
  assert.match(twice.error.message, /more than once/);
});
