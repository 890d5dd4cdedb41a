// The simulator's session keys and client regions come from the trace's conversations, not from a
// fixed number of leading blocks: a held-out trace whose rows mostly share a long tool prompt must not
// collapse into one session and one client region.
import assert from "node:assert/strict";
import { test } from "node:test";
import { sessionKeyFromBlocks, traceBlockKeys } from "@meridian/routing";
import { assignRegion, bundledTracePath, loadTrace, type TraceRequest } from "@meridian/workload";
import { toolAgentTrace, TOOL_PROMPT } from "@meridian/workload/testing/tool-agent-trace";
import { buildSimRequests, globalFleet } from "./index";

/** The rows of the workload package's tool-agent-shaped test trace. */
const toolAgentRows = (): TraceRequest[] => toolAgentTrace().rows;

function shares(values: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1 / values.length);
  return counts;
}

test("a tool-agent trace: one session per conversation and client regions near the fleet's weights", () => {
  const spec = globalFleet();
  const built = buildSimRequests(toolAgentRows(), spec);
  // Before: the 340 conversations behind the tool prompt were one session (85 % of the requests) from one region.
  assert.equal(new Set(built.requests.map((r) => r.sessionKey)).size, 400);
  assert.ok(built.largestSessionShare < 0.01, `largest session ${built.largestSessionShare}`);
  assert.deepEqual(built.sessionKeyBlocks, { min: 2, max: TOOL_PROMPT.length + 1 });
  const regions = shares(built.requests.map((r) => r.clientRegion));
  const total = Object.values(spec.clientRegionWeights).reduce((a, b) => a + b, 0);
  for (const [region, w] of Object.entries(spec.clientRegionWeights)) {
    const got = regions.get(region) ?? 0;
    assert.ok(Math.abs(got - w / total) < 0.08, `${region}: ${got.toFixed(3)} of the requests, weight ${(w / total).toFixed(3)}`);
  }
});

test("an explicit sessionKeyBlocks fixes the key depth, and the client region follows that key", () => {
  const spec = globalFleet();
  const rows = toolAgentRows();
  const { requests } = buildSimRequests(rows, spec, { sessionKeyBlocks: 25 });
  for (const r of requests) {
    const ids = rows[r.traceIndex]!.hashIds;
    assert.equal(r.sessionKey, sessionKeyFromBlocks(traceBlockKeys(ids), 25));
    assert.equal(r.clientRegion, assignRegion(ids.slice(0, 25).join("/"), spec.clientRegionWeights));
  }
  // Before: the region came from the first two ids whatever the depth, so 85 % were in one region.
  const largestRegion = Math.max(...shares(requests.map((r) => r.clientRegion)).values());
  assert.ok(largestRegion < 0.5, `largest region ${largestRegion.toFixed(3)}`);
});

test("the conversation trace keeps its keys: the first two blocks, regions by the first two ids", async () => {
  const spec = globalFleet();
  const rows = await loadTrace(bundledTracePath());
  const built = buildSimRequests(rows, spec);
  for (const r of built.requests) {
    const ids = rows[r.traceIndex]!.hashIds;
    assert.equal(r.sessionKey, sessionKeyFromBlocks(traceBlockKeys(ids), 2));
    assert.equal(r.clientRegion, assignRegion(`${ids[0]}/${ids[1]}`, spec.clientRegionWeights));
  }
  assert.deepEqual(built.sessionKeyBlocks, { min: 2, max: 2 });
});

test("a single-row trace is one session with a region of the fleet", () => {
  const spec = globalFleet();
  const [row] = toolAgentRows();
  const { requests } = buildSimRequests([row!], spec);
  assert.equal(requests.length, 1);
  assert.equal(requests[0]!.sessionKey, sessionKeyFromBlocks(traceBlockKeys(row!.hashIds), 2));
  assert.ok(spec.regions.includes(requests[0]!.clientRegion));
});

test("the keys found for one window are reused at another time scale, and never for other rows", () => {
  const spec = globalFleet();
  const rows = toolAgentRows();
  const keysOf = (rs: readonly TraceRequest[]) => buildSimRequests(rs, spec).requests.map((r) => r.sessionKey);
  const first = keysOf(rows);
  assert.deepEqual(keysOf(rows.map((r) => ({ ...r, timestampMs: r.timestampMs * 2 }))), first);
  // As many rows, other prompts: keyed afresh, not served the keys found for the first rows.
  const other = rows.map((r) => ({ ...r, hashIds: [...r.hashIds].reverse() }));
  assert.notDeepEqual(keysOf(other), first);
  assert.deepEqual(keysOf(rows), first);
});
