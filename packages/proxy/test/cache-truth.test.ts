// The LB knows what its engines actually hold, over real HTTP: it sizes each replica's part of its
// prefix index from the engine's /metrics, learns from the cached tokens the engine reports, says in
// its state and /metrics when an engine reports none at all, and clears a replica whose engine
// restarted behind it.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { request } from "undici";
import type { LbState } from "@meridian/protocol";
import type { RunningProxy } from "../src/index";
import { adminGet, chatBody, DEMO_ENGINE_PARAMS, lbConfig, post, servedBy, startEngine, startLb, TOKEN, waitFor, type Engine } from "./helpers";

let reporting: Engine;
let silent: Engine;
let lb: RunningProxy;

before(async () => {
  reporting = await startEngine("us-reporting", "us-ashburn");
  // Started as vLLM without --enable-prompt-tokens-details: usage carries no cached tokens.
  silent = await startEngine("us-silent", "us-ashburn", { dialect: "vllm", cacheReport: false });
  const config = lbConfig("lb-us", "us-ashburn", [reporting, silent], { policy: "round-robin" });
  config.replicas = (config.replicas ?? []).map((r) => (r.id === silent.id ? { ...r, engine: "vllm" as const } : r));
  lb = await startLb(config);
  await waitFor("both replicas probed and scraped", async () => {
    const state = await adminGet<LbState>(lb, "/admin/state");
    return state.replicas.every((r) => r.healthy && r.cache.capacityTokens !== null) ? state : undefined;
  });
});
after(async () => {
  await lb?.close();
  await reporting?.close();
  await silent?.close();
});

const replicaState = (state: LbState, id: string) => state.replicas.find((r) => r.id === id)!;

async function metricsText(): Promise<string> {
  const response = await request(`${lb.url}/metrics`);
  return response.body.text();
}

test("each replica's part of the index is sized from its engine's KV capacity, in both dialects", async () => {
  const state = await adminGet<LbState>(lb, "/admin/state");
  for (const id of [reporting.id, silent.id]) {
    const cache = replicaState(state, id).cache;
    assert.equal(cache.capacityTokens, DEMO_ENGINE_PARAMS.kvCapacityTokens, id);
    assert.equal(cache.capacitySource, "metrics");
    assert.ok(cache.budgetBlocks !== null && cache.budgetBlocks > 0, `${id}: budget ${cache.budgetBlocks}`);
  }
});

test("state and /metrics say which replica reports cached tokens and how accurate the index is", async () => {
  const served = new Set<string>();
  for (let turn = 0; turn < 8; turn++) {
    const result = await post(`${lb.url}/v1/chat/completions`, chatBody(`question ${turn >> 1} about caching, asked twice`));
    assert.equal(result.status, 200, result.text);
    served.add(servedBy(result) ?? "");
  }
  assert.ok(served.has(reporting.id) && served.has(silent.id), `round-robin used both: ${[...served].join(", ")}`);
  const state = await waitFor("both replicas' completions recorded", async () => {
    const s = await adminGet<LbState>(lb, "/admin/state");
    return replicaState(s, reporting.id).cache.reports > 0 && replicaState(s, silent.id).cache.unreported > 0 ? s : undefined;
  });
  const good = replicaState(state, reporting.id).cache;
  assert.equal(good.cachedTokensReported, true);
  assert.notEqual(good.accuracy, null);
  const quiet = replicaState(state, silent.id).cache;
  assert.equal(quiet.cachedTokensReported, false);
  assert.equal(quiet.accuracy, null);
  const text = await metricsText();
  assert.match(text, new RegExp(`^meridian_lb_replica_cached_tokens_reported\\{replica="${silent.id}"\\} 0$`, "m"));
  assert.match(text, new RegExp(`^meridian_lb_replica_cached_tokens_reported\\{replica="${reporting.id}"\\} 1$`, "m"));
  assert.match(text, new RegExp(`^meridian_lb_replica_prediction_accuracy_ratio\\{replica="${reporting.id}"\\} [0-9.]+$`, "m"));
});

test("an engine restarted behind the LB (its counters went back) has its part of the index cleared", async () => {
  // Warm the reporting replica's part of the index, then restart its engine on the same address.
  for (let i = 0; i < 4; i++) await post(`${lb.url}/v1/chat/completions`, chatBody(`restart warm-up ${i}`));
  await waitFor("routes learned for the reporting replica", async () => {
    const s = await adminGet<LbState>(lb, "/admin/state");
    return replicaState(s, reporting.id).cache.routes > 0 ? s : undefined;
  });
  const port = reporting.port;
  await reporting.close();
  reporting = await startEngine("us-reporting", "us-ashburn", { port });
  const state = await waitFor(
    "the restart detected by a scrape",
    async () => {
      const s = await adminGet<LbState>(lb, "/admin/state");
      return replicaState(s, reporting.id).cache.lastClearReason === "engine-restart" ? s : undefined;
    },
    10_000,
  );
  const cache = replicaState(state, reporting.id).cache;
  assert.ok(cache.clears >= 1);
  assert.match(await metricsText(), new RegExp(`^meridian_lb_replica_index_clears_total\\{replica="${reporting.id}",reason="engine-restart"\\} [1-9]`, "m"));
});

test("POST /admin/flush empties every replica's part of the index and says the operator did it", async () => {
  const response = await request(`${lb.url}/admin/flush`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(response.statusCode, 200);
  await response.body.text();
  const state = await adminGet<LbState>(lb, "/admin/state");
  for (const r of state.replicas) {
    assert.equal(r.cache.lastClearReason, "operator", r.id);
    assert.equal(r.cache.routes, 0, r.id);
  }
  assert.equal(state.index.routes, 0);
  assert.match(await metricsText(), new RegExp(`^meridian_lb_replica_index_clears_total\\{replica="${silent.id}",reason="operator"\\} 1$`, "m"));
});
