import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { createDatabase } from "@meridian/db";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { createLb, updateLb } from "../services/lbs";
import { overviewSummary } from "../services/overview";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { setManualWeights, startTuner, stopTuner, tunerByLb, updateTuner } from "../services/tuner";
import { armOf } from "@meridian/tuner";
import { ConsoleRuntime } from "./runtime";
import { DomainError } from "../errors";

/** A console whose one LB, lb-a in us-ashburn, is a fake LB. */
async function consoleWithOneLb(): Promise<{ h: Harness; lb: FakeLb }> {
  const h = await createHarness();
  const lb = await startFakeLb({ id: "lb-a", region: "us-ashburn", token: TEST_TOKEN });
  await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
  await createLb(h.rt, OPERATOR, { name: "lb-a", url: lb.url, region: "us-ashburn" });
  return { h, lb };
}

/** Registers, in the calling describe block, a console with one LB whose telemetry it streams. */
function streamingConsoleWithOneLb(): { h: Harness; lb: FakeLb } {
  const fleet = {} as { h: Harness; lb: FakeLb };
  before(async () => {
    Object.assign(fleet, await consoleWithOneLb());
    await fleet.h.rt.telemetry.start();
  });
  after(async () => {
    fleet.h?.rt.telemetry.stop();
    await fleet.h?.close();
    await fleet.lb?.close();
  });
  return fleet;
}

describe("TelemetryHub and TunerService", () => {
  let h: Harness;
  let lb: FakeLb;
  before(async () => {
    ({ h, lb } = await consoleWithOneLb());
    await createReplica(h.rt, OPERATOR, { name: "r1", url: "http://127.0.0.1:9", region: "us-ashburn", engine: "sglang", model: "m", homeLbId: "lb-a" });
    await createReplica(h.rt, OPERATOR, { name: "r2", url: "http://127.0.0.1:10", region: "us-ashburn", engine: "vllm", model: "m", homeLbId: "lb-a" });
    await h.rt.start();
    await waitFor(() => lb.version > 0, 5_000, "first config");
  });
  after(async () => {
    await h.close();
    await lb.close();
  });

  test("events are counted once across reconnects and resumed with ?since=lastSeq", async () => {
    await waitFor(() => h.rt.telemetry.status()[0]?.connected, 5_000, "subscription");
    for (let i = 0; i < 5; i += 1) lb.emit({ replicaId: i % 2 === 0 ? "r1" : "r2" });
    await waitFor(() => h.rt.telemetry.status()[0]?.lastSeq === 5, 5_000, "5 events");
    lb.dropStreams();
    lb.emit();
    lb.emit({ status: 503, error: "upstream failed", ttftMs: null, replicaId: null });
    await waitFor(() => h.rt.telemetry.status()[0]?.lastSeq === 7, 5_000, "resumed");
    const status = h.rt.telemetry.status()[0]!;
    assert.equal(status.events, 7, "each event counted once");
    assert.ok(lb.telemetryRequests.includes("5"), `resumed from seq 5 (asked: ${lb.telemetryRequests.join(",")})`);
    // A replayed event (same seq) is ignored.
    const replay = { ...lb.emit(), seq: 3 };
    assert.equal(h.rt.telemetry.ingest("lb-a", replay), false);
    const stats = h.rt.telemetry.stats;
    assert.ok(stats.rps() > 0);
    const errorRate = stats.errorRate() ?? 0;
    assert.ok(errorRate > 0 && errorRate < 1);
    const shares = stats.replicaStats();
    assert.ok((shares.get("r1")?.share ?? 0) > 0.5);
    assert.equal(shares.get("r1")?.cacheHitRate, 0.5);
  });

  test("the tuner trials candidates on the LB's tagged events, pushes the next trial and persists every step", async () => {
    await updateTuner(h.rt, OPERATOR, {
      lbId: "lb-a",
      trial: { lookEvery: 10, maxSamples: 120 },
      guardrails: { enabled: true, e2eRatio: 0.25, maxShare: 1, maxErrorRate: 0.5 },
    });
    await startTuner(h.rt, OPERATOR, { lbId: "lb-a" });
    const before = await tunerByLb(h.rt, { lbId: "lb-a" });
    assert.equal(before.mode, "online");
    assert.equal(before.running, true);
    assert.ok(before.trial);
    await waitFor(() => lb.configs.at(-1)?.trial?.id === before.trial!.id, 5_000, "trial live");
    // The candidate arm is slower: rejected at the first look, and the next trial goes out.
    for (let i = 0; (await tunerByLb(h.rt, { lbId: "lb-a" })).steps.length === 0 && i < 40; i += 1) {
      const sessionKey = `tt-${i}`;
      const { salt, share, id } = (await h.rt.tuners.ensure("lb-a")).tuner.current().trial!;
      const arm = armOf(sessionKey, salt, share);
      const emitted = lb.emit({ trialId: id, arm, triggered: true, sessionKey, ttftMs: arm === "candidate" ? 800 : 100, replicaId: i % 2 ? "r1" : "r2" });
      await waitFor(() => h.rt.telemetry.status()[0]?.lastSeq === emitted.seq, 5_000, `event ${i + 1}`);
    }
    const after = await tunerByLb(h.rt, { lbId: "lb-a" });
    assert.equal(after.steps[0]?.kind, "trial");
    assert.equal(after.steps[0]?.decision, "reject-worse");
    assert.notEqual(after.trial!.id, before.trial!.id);
    assert.equal((await h.rt.store.db.select().from(h.rt.store.tables.tunerSteps)).length, 1);
  });

  test("manual weights outside the bounds are refused with a clear message", async () => {
    await assert.rejects(
      async () => await setManualWeights(h.rt, OPERATOR, { lbId: "lb-a", weights: { rtt: 500, queue: 0.1 } }),
      (error: unknown) => error instanceof DomainError && error.kind === "invalid" && /W_rtt 500 is outside the bounds \[0\.05, 100\]/.test(error.message),
    );
    await setManualWeights(h.rt, OPERATOR, { lbId: "lb-a", weights: { rtt: 1.5, queue: 0.2 } });
    const described = await tunerByLb(h.rt, { lbId: "lb-a" });
    assert.equal(described.mode, "manual");
    assert.deepEqual(described.weights, { rtt: 1.5, queue: 0.2 });
  });

  test("a restarted console resumes the tuner where it stopped", async () => {
    await waitFor(() => lb.configs.at(-1)?.weights.rtt === 1.5, 5_000, "manual weights pushed");
    await startTuner(h.rt, OPERATOR, { lbId: "lb-a" });
    const before = await tunerByLb(h.rt, { lbId: "lb-a" });
    const database2 = createDatabase(h.settings);
    const rt2 = new ConsoleRuntime(database2, h.rt.options);
    try {
      const resumed = await rt2.tuners.ensure("lb-a");
      assert.equal(resumed.runId, before.runId);
      const described = await rt2.tuners.describe("lb-a");
      assert.equal(described.steps.length, before.steps.length);
      assert.equal(described.mode, "online");
      assert.deepEqual(described.weights, before.weights);
      assert.equal(described.sigma, before.sigma);
    } finally {
      await database2.close();
    }
    await stopTuner(h.rt, OPERATOR, { lbId: "lb-a" });
    assert.equal((await tunerByLb(h.rt, { lbId: "lb-a" })).running, false);
    const runs = await h.rt.store.db.select().from(h.rt.store.tables.tunerRuns);
    assert.equal(runs.length, 1);
  });
});

describe("an LB's admin URL changed", () => {
  const withLb = streamingConsoleWithOneLb();

  test("the subscription moves to the new URL and resumes after the last event seen: nothing reaches the tuner twice", async () => {
    const { h, lb } = withLb;
    const seen: number[] = [];
    h.rt.telemetry.onEvent((event) => seen.push(event.seq));
    for (let i = 0; i < 5; i += 1) lb.emit();
    await waitFor(() => seen.length === 5, 5_000, "5 events");
    const asked = lb.telemetryRequests.length;
    // The same LB process, reached by another name.
    await updateLb(h.rt, OPERATOR, { id: "lb-a", adminUrl: `http://localhost:${new URL(lb.url).port}` });
    await waitFor(() => lb.telemetryRequests.length > asked, 5_000, "a subscription at the new admin URL");
    assert.equal(lb.telemetryRequests.at(-1), "5", "resumed after seq 5");
    lb.emit();
    await waitFor(() => seen.includes(6), 5_000, "the next event");
    assert.deepEqual(seen, [1, 2, 3, 4, 5, 6], "each event delivered once");
  });
});

describe("events an LB no longer holds", () => {
  const withLb = streamingConsoleWithOneLb();

  test("are counted per LB in the overview's telemetry, beside the stream's state", async () => {
    const { h, lb } = withLb;
    for (let i = 0; i < 3; i += 1) lb.emit();
    await waitFor(() => h.rt.telemetry.status()[0]?.lastSeq === 3, 5_000, "3 events");
    // The stream breaks; by the time the console resumes, the LB's ring has lost seq 4 to 8.
    lb.dropStreams();
    for (let i = 0; i < 7; i += 1) lb.emit();
    lb.forget(8);
    await waitFor(() => h.rt.telemetry.status()[0]?.lastSeq === 10, 5_000, "resumed after the gap");
    await waitFor(() => h.rt.telemetry.status()[0]?.connected, 5_000, "stream open");
    const telemetry = (await overviewSummary(h.rt)).telemetry;
    assert.equal(telemetry.length, 1);
    assert.deepEqual(
      {
        lbId: telemetry[0]!.lbId,
        connected: telemetry[0]!.connected,
        events: telemetry[0]!.events,
        dropped: telemetry[0]!.dropped,
        lastError: telemetry[0]!.lastError,
      },
      { lbId: "lb-a", connected: true, events: 5, dropped: 5, lastError: null },
    );
  });
});
