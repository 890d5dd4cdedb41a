// The acceptance test of the shared LB core: each scripted scenario (@meridian/lb-core/testing) runs
// through real proxies over HTTP, in front of scripted engines, and through the simulator's LB model
// in virtual time (@meridian/sim runLbScenario). The two placement logs (every route, hold, forward
// and refusal, with attempts, hops and the index's predicted cached tokens) must be identical, step
// by step, and match what the script expects.
import { strict as assert } from "node:assert";
import { after, test } from "node:test";
import { canonicalStep, expectedOf, SCENARIO_MODEL, SCENARIO_PROBES, SCENARIOS, scenarioMessages, type LbScenario } from "@meridian/lb-core/testing";
import type { PlacementLogEntry } from "@meridian/lb-core";
import type { LbConfigInput } from "@meridian/protocol";
import { runLbScenario } from "@meridian/sim";
import type { RunningProxy } from "../src/index";
import { adminPutConfig, post, startLb, waitFor, type PostResult } from "./helpers";
import { startScriptedEngine, type ScriptedEngine } from "./scripted-engine";

const open: { close(): Promise<void> }[] = [];
after(async () => {
  for (const thing of open.reverse()) await thing.close();
});

interface ProxyRun {
  steps: PlacementLogEntry[][];
  statuses: Record<string, number>;
}

async function runOnProxies(scenario: LbScenario): Promise<ProxyRun> {
  const log: PlacementLogEntry[] = [];
  const engines = new Map<string, ScriptedEngine>();
  for (const lb of scenario.lbs) {
    for (const r of lb.replicas) {
      const engine = await startScriptedEngine(r.id, r.rttMs);
      open.push(engine);
      engines.set(r.id, engine);
    }
  }
  const configs = scenario.lbs.map(
    (lb): LbConfigInput => ({
      schema: "meridian.lb-config/1",
      version: 1,
      lbId: lb.id,
      region: lb.region,
      policy: scenario.policy,
      crossRegion: scenario.mode,
      replicas: lb.replicas.map((r) => ({
        id: r.id,
        url: engines.get(r.id)!.url,
        region: r.region,
        model: r.model ?? SCENARIO_MODEL,
        engine: "sglang",
        state: r.state ?? "enabled",
      })),
      limits: scenario.limits,
      probes: SCENARIO_PROBES,
    }),
  );
  const lbs = new Map<string, RunningProxy>();
  for (const [i, config] of configs.entries()) {
    const lb = await startLb(config, {
      seed: scenario.seed,
      onPlacement: (entry) => log.push(entry),
      settings: { peerPollIntervalMs: SCENARIO_PROBES.scrapeIntervalMs },
    });
    open.push(lb);
    lbs.set(scenario.lbs[i]!.id, lb);
  }
  if (lbs.size > 1) {
    // LB URLs exist only once all listen: peers arrive with config version 2.
    for (const [i, config] of configs.entries()) {
      const peers = scenario.lbs.filter((_, j) => j !== i).map((p) => ({ id: p.id, url: lbs.get(p.id)!.url, region: p.region }));
      await adminPutConfig(lbs.get(scenario.lbs[i]!.id)!, { ...config, version: 2, peers });
    }
  }
  await waitFor("every replica probed", () => [...lbs.values()].every((lb) => [...lb.balancer.core.replicas.values()].every((r) => r.probed)));

  /** What the simulator's runner does after each step: every LB scrapes, then every LB polls its peers
   * (so each report a peer serves already reflects that peer's scrape). */
  async function observe(): Promise<void> {
    await Promise.all([...lbs.values()].map((lb) => lb.balancer.scrapeNow()));
    await Promise.all([...lbs.values()].map((lb) => lb.balancer.pollPeersNow()));
  }

  const clients = new Map<string, Promise<PostResult>>();
  const steps: PlacementLogEntry[][] = [];
  let consumed = 0;
  await observe();
  for (const step of scenario.steps) {
    if ("load" in step) {
      engines.get(step.load)!.setLoad(step.running, step.waiting);
    } else if ("send" in step) {
      const lb = lbs.get(step.lb)!;
      const body = { model: step.model ?? SCENARIO_MODEL, messages: scenarioMessages(step.text), max_tokens: 8 };
      clients.set(step.send, post(`${lb.url}/v1/chat/completions`, body, { "x-session-id": step.send }));
    } else if ("finish" in step) {
      const session = step.finish;
      const engine = await waitFor(`an engine holding ${session}`, () => [...engines.values()].find((e) => e.holds(session)));
      engine.finish(session);
      const result = await clients.get(session)!;
      assert.equal(result.status, 200, result.text);
      // The LB learns off the response path, on a later turn of its event loop: an immediate queued
      // now runs after it (same process, FIFO), so the index is up to date for the next step.
      await new Promise((resolve) => setImmediate(resolve));
    }
    await observe();
    const want = step.expect?.length ?? 0;
    await waitFor(`${scenario.name}: ${want} placements after step ${steps.length + 1}`, () => log.length >= consumed + want, 10_000);
    steps.push(canonicalStep(log.slice(consumed, consumed + want)));
    consumed += want;
  }
  const statuses: Record<string, number> = {};
  for (const [id, client] of clients) statuses[id] = (await client).status;
  if (process.env.SCENARIO_DEBUG) for (const e of log) console.log(JSON.stringify(e));
  assert.equal(log.length, consumed, `unexpected placements: ${JSON.stringify(log.slice(consumed))}`);
  return { steps, statuses };
}

for (const scenario of SCENARIOS) {
  test(`proxy and simulator place identically: ${scenario.name}`, async () => {
    const proxy = await runOnProxies(scenario);
    const sim = runLbScenario(scenario);
    assert.deepEqual(
      proxy.steps.map((entries) => entries.map(expectedOf).sort()),
      scenario.steps.map((step) => [...(step.expect ?? [])].sort()),
    );
    assert.deepEqual(proxy.steps, sim.steps);
    assert.deepEqual(proxy.statuses, sim.statuses);
  });
}
