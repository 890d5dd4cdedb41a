import assert from "node:assert/strict";
import { WEIGHT_BOUNDS as DEFAULT_BOUNDS } from "@meridian/routing";
import { test } from "node:test";
import { armOf } from "@meridian/tuner";
import { bundledTracePath, loadTrace, type TraceRequest } from "@meridian/workload";
import { buildSimRequests, compare, globalFleet, paperFleet, simulateFleet, spreadTicks, type DecisionTrace, type FleetSpec, type SimRequest } from "./index";
import { assertCompareContractFields } from "../../test/compare-contract";

const rowsPromise = loadTrace(bundledTracePath(), { toMs: 60_000 });

async function smallWorkload(spec: FleetSpec = paperFleet(), timeScale = 2): Promise<SimRequest[]> {
  const rows = (await rowsPromise).map((r: TraceRequest) => ({ ...r, timestampMs: r.timestampMs * timeScale }));
  return buildSimRequests(rows, spec).requests;
}

test("a run is deterministic for a seed and differs for another seed", async () => {
  const spec = paperFleet();
  const requests = await smallWorkload(spec);
  const a = simulateFleet(spec, requests, { policy: "random", seed: 7, recordRequests: true });
  const b = simulateFleet(spec, requests, { policy: "random", seed: 7, recordRequests: true });
  const c = simulateFleet(spec, requests, { policy: "random", seed: 8, recordRequests: true });
  assert.deepEqual(a.summary, b.summary);
  assert.deepEqual(a.records, b.records);
  assert.notDeepEqual(
    a.records!.map((r) => r.replica),
    c.records!.map((r) => r.replica),
  );
});

test("every request completes with client TTFT covering the network path", async () => {
  const spec = paperFleet();
  const requests = await smallWorkload(spec);
  const result = simulateFleet(spec, requests, { policy: "gorgo", seed: 1, recordRequests: true });
  assert.equal(result.summary.completed, requests.length);
  for (const r of result.records!) {
    // Clients sit beside the Ashburn LB; the LB→replica round trip is part of TTFT.
    const rtt = spec.rttMs["us-ashburn"]![r.replica_region]!;
    assert.ok(r.ttft_ms >= rtt, `ttft ${r.ttft_ms} < rtt ${rtt}`);
    assert.ok(r.e2e_ms >= r.ttft_ms);
    assert.ok(r.cached_tokens <= r.input_tokens);
  }
  const shares = Object.values(result.summary.replica_share);
  assert.equal(shares.length, 3);
  assert.ok(Math.abs(shares.reduce((s, x) => s + x, 0) - 1) < 1e-9);
});

test("session-affinity keys on the first two blocks: a conversation stays on one replica", async () => {
  const spec = paperFleet();
  const requests = await smallWorkload(spec);
  const result = simulateFleet(spec, requests, { policy: "session-affinity", seed: 1, recordRequests: true });
  const bySession = new Map<string, Set<string>>();
  for (const r of result.records!) {
    const key = requests[r.id]!.sessionKey;
    if (!bySession.has(key)) bySession.set(key, new Set());
    bySession.get(key)!.add(r.replica);
  }
  for (const replicas of bySession.values()) assert.equal(replicas.size, 1);
  // And it spreads conversations, which a one-block key (shared system prompt) would not.
  assert.ok(result.summary.max_share < 0.6, `max share ${result.summary.max_share}`);
});

test("compare produces the JSON contract fields for each policy", async () => {
  const spec = paperFleet();
  const requests = await smallWorkload(spec);
  const { json } = compare({ spec, requests, seed: 3 }, ["gorgo", "least-request", "prefix-cache"], { evaluation: "ab", guardrails: true });
  assert.equal(json.policies.length, 3);
  for (const p of json.policies) {
    assertCompareContractFields(p);
    for (const q of ["p50", "p95", "p99"] as const) {
      assert.equal(typeof p.ttft_ms[q], "number");
      assert.equal(typeof p.e2e_ms[q], "number");
    }
    assert.equal(p.completed, requests.length);
    assert.deepEqual(Object.keys(p.replica_share).sort(), ["ap-seoul", "eu-frankfurt", "us-ashburn"]);
  }
});

test("the online tuner runs in virtual time and records a trajectory", async () => {
  const spec = paperFleet();
  const requests = await smallWorkload(spec, 1);
  const result = simulateFleet(spec, requests, {
    policy: "gorgo",
    seed: 5,
    tuner: { evaluation: "paper", guardrails: true, window: 16, hop: 16 },
  });
  const report = result.tuners[0]!;
  assert.ok(report.trajectory.length >= 3, `only ${report.trajectory.length} steps`);
  assert.equal(report.steps, report.trajectory.length);
  let lastAt = -Infinity;
  for (const point of report.trajectory) {
    assert.ok(point.atMs >= lastAt, "steps are in virtual-time order");
    lastAt = point.atMs;
    assert.ok(point.weights.rtt >= DEFAULT_BOUNDS.rtt[0] && point.weights.rtt <= DEFAULT_BOUNDS.rtt[1]);
    assert.ok(point.weights.queue >= DEFAULT_BOUNDS.queue[0] && point.weights.queue <= DEFAULT_BOUNDS.queue[1]);
  }
  // Versioned evaluation: each window is scored on samples routed under one config version, so the
  // LB published a new version per step.
  assert.ok(report.samplesSeen <= requests.length);
});

test("LB views are stale: the scraped load lags the engine between scrapes", async () => {
  const spec: FleetSpec = { ...paperFleet(), scrapeIntervalMs: 60_000 };
  const requests = await smallWorkload(spec, 1);
  // With a 60 s scrape, least-load sees the t=0 scrape (all idle) for its first minute and only its
  // own queued tokens; with a 1 s scrape it sees the engines. Different views, different choices.
  const stale = simulateFleet(spec, requests, { policy: "least-load", seed: 1, recordRequests: true });
  const fresh = simulateFleet({ ...spec, scrapeIntervalMs: 1_000 }, requests, { policy: "least-load", seed: 1, recordRequests: true });
  const differ = stale.records!.filter((r, i) => r.replica !== fresh.records![i]!.replica).length;
  assert.ok(differ > 0, "scrape staleness changed no decision");
});

test("the scraped load in the LB's view lags the engine's true load", async () => {
  const spec: FleetSpec = { ...paperFleet(), scrapeIntervalMs: 30_000 };
  const requests = await smallWorkload(spec, 1);
  let decisions = 0;
  let lagging = 0;
  let firstScrapeSeen = true;
  simulateFleet(spec, requests, {
    policy: "least-request",
    seed: 1,
    onDecision: (d) => {
      decisions++;
      for (const v of d.views) {
        assert.ok(v.scraped !== null, "the t=0 scrape lands before the first decision");
        if (v.scraped!.running !== v.actualRunning) lagging++;
        // Before the 30 s scrape (sampled at 30 s, back half an RTT later) the view is the idle t=0 one.
        if (d.nowMs < 30_000 && v.scraped!.running !== 0) firstScrapeSeen = false;
      }
    },
  });
  assert.equal(decisions, requests.length);
  assert.ok(firstScrapeSeen, "a decision in the first 30 s saw a scrape newer than t=0");
  assert.ok(lagging > decisions / 2, `only ${lagging} of ${decisions * 3} views lagged`);
});

test("reward hack: W_queue at zero sends every request to the nearest replica that is not full", async () => {
  const spec = paperFleet();
  const requests = await smallWorkload(spec, 1);
  const decisions: DecisionTrace[] = [];
  const hacked = simulateFleet(spec, requests, { policy: "gorgo", seed: 1, weights: { rtt: 0.23, queue: 0 }, onDecision: (d) => decisions.push(d) });
  const balanced = simulateFleet(spec, requests, { policy: "gorgo", seed: 1, weights: { rtt: 0.5, queue: 0.1 } });
  // Only SkyLB's full rule (the LB holds what no replica can take) pushes traffic off the nearest
  // replica: whenever Ashburn was among the candidates, the hacked policy chose it.
  const ashburnOffered = decisions.filter((d) => d.views.some((v) => v.replica === "us-ashburn"));
  assert.ok(ashburnOffered.length > 0);
  for (const d of ashburnOffered) assert.equal(d.choice, "us-ashburn");
  assert.ok(
    hacked.summary.replica_share["us-ashburn"]! > balanced.summary.replica_share["us-ashburn"]!,
    JSON.stringify([hacked.summary.replica_share, balanced.summary.replica_share]),
  );
  assert.equal(hacked.summary.replica_share["ap-seoul"], 0);
});

test("a standing trial routes each session with its arm's weights for the whole run, with no tuner", async () => {
  const trial = { id: "standing", salt: "5eed5a17", share: 0.3, candidate: { rtt: 20, queue: 0.05 } };
  const base = paperFleet();
  const spec = { ...base, lbs: base.lbs.map((lb) => ({ ...lb, weights: { rtt: 0.5, queue: 0.1 }, trial })) };
  const requests = await smallWorkload(spec);
  const result = simulateFleet(spec, requests, { policy: "gorgo", seed: 1, recordRequests: true });
  assert.equal(result.summary.completed, requests.length);
  const sessions = new Set<string>();
  for (const r of result.records!) {
    const sessionKey = requests[r.id]!.sessionKey;
    sessions.add(sessionKey);
    const expected = armOf(sessionKey, trial.salt, trial.share) === "candidate" ? trial.candidate : { rtt: 0.5, queue: 0.1 };
    assert.deepEqual(r.weights, expected, `session ${sessionKey}`);
  }
  const inCandidate = [...sessions].filter((key) => armOf(key, trial.salt, trial.share) === "candidate").length;
  assert.ok(inCandidate > 0 && inCandidate < sessions.size, `${inCandidate} of ${sessions.size} sessions in the candidate arm`);
});

test("a time-slot split runs every LB on one weight set per slot, and refuses to run beside a tuner", async () => {
  const spec = paperFleet();
  const requests = await smallWorkload(spec);
  const a = { rtt: 0.5, queue: 0.1 };
  const b = { rtt: 20, queue: 0.05 };
  const span = requests[requests.length - 1]!.arrivalMs - requests[0]!.arrivalMs;
  const slotMs = span / 10;
  const result = simulateFleet(spec, requests, { policy: "gorgo", seed: 1, recordRequests: true, timeSlots: { slotMs, weights: [a, b], salt: 3 } });
  assert.equal(result.summary.completed, requests.length);
  const byArrival = [...result.records!].sort((x, y) => x.arrival_ms - y.arrival_ms);
  const inA = byArrival.filter((r) => r.weights.rtt === a.rtt && r.weights.queue === a.queue).length;
  const inB = byArrival.filter((r) => r.weights.rtt === b.rtt && r.weights.queue === b.queue).length;
  assert.equal(inA + inB, requests.length, "every request ran on one of the two weight sets");
  assert.ok(inA > 0 && inB > 0, `${inA} + ${inB}: both sets drawn over ten slots`);
  // Slots, not sessions: the weights change only at slot boundaries, so at most once per slot.
  const changes = byArrival.filter((r, i) => i > 0 && r.weights.rtt !== byArrival[i - 1]!.weights.rtt).length;
  assert.ok(changes <= 10, `${changes} changes of weights over ten slots`);
  assert.throws(
    () =>
      simulateFleet(spec, requests, {
        policy: "gorgo",
        seed: 1,
        timeSlots: { slotMs, weights: [a, b], salt: 3 },
        tuner: { evaluation: "ab", guardrails: true },
      }),
    /time-slot split and a tuner/,
  );
});

test("via-peer mode: full local replicas forward to a peer LB once, or hold; the hold is bounded", async () => {
  const base = globalFleet();
  const spec: FleetSpec = {
    ...base,
    // Tiny batches and fast scrapes so replicas report full often.
    engine: { ...base.engine, maxRunning: 2 },
    scrapeIntervalMs: 500,
    lbs: base.lbs.map((lb) => ({ ...lb, crossRegion: "via-peer" as const })),
  };
  const requests = await smallWorkload(spec, 1);
  // With a wait bound longer than the run, everything completes.
  const patient = simulateFleet({ ...spec, lbLimits: { queueMaxWaitMs: 600_000 } }, requests, { policy: "least-request", seed: 2, recordRequests: true });
  assert.equal(patient.summary.completed, requests.length);
  const forwarded = patient.records!.filter((r) => r.forwarded);
  assert.ok(forwarded.length > 0, "no request was forwarded");
  for (const r of patient.records!) {
    // Local first: a request not forwarded is served in its LB's region.
    if (!r.forwarded) assert.equal(r.replica_region, r.lb.replace(/^lb-/, ""));
  }
  // With the live default (30 s), what waits longer is refused with 503 queue_timeout, as the proxy does.
  const bounded = simulateFleet(spec, requests, { policy: "least-request", seed: 2 });
  assert.ok(bounded.summary.failed > 0);
  assert.deepEqual(Object.keys(bounded.summary.failed_by_code), ["queue_timeout"]);
  assert.equal(bounded.summary.completed + bounded.summary.failed, requests.length);
});

test("spreadTicks spaces a tick's requests over the gap to the next tick", () => {
  assert.deepEqual(spreadTicks([0, 0, 0, 3000, 3000, 6000]), [0, 1000, 2000, 3000, 4500, 6000]);
  assert.deepEqual(spreadTicks([5, 5]), [5, 5]);
});

test("a workload of 256-token blocks is cached and reported in 256-token blocks (not the engine preset's 512)", () => {
  const spec = paperFleet();
  const row = (index: number, blocks: number): TraceRequest => ({
    index,
    timestampMs: index * 60_000,
    sourceTimestampMs: index * 60_000,
    inputTokens: blocks * 256,
    outputTokens: 16,
    hashIds: Array.from({ length: blocks }, (_, i) => i + 1),
    blockTokens: 256,
    format: "multi-turn",
  });
  // The second prompt extends the first: 4 of its 8 blocks are cached, 1,024 tokens.
  const { requests } = buildSimRequests([row(0, 4), row(1, 8)], spec);
  const result = simulateFleet(spec, requests, { policy: "session-affinity", seed: 1, recordRequests: true });
  const second = result.records!.find((r) => r.id === 1)!;
  assert.equal(second.cached_tokens, 1_024);
  assert.equal(second.input_tokens, 2_048);
});
