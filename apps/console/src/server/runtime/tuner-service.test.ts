// TunerService with A/B trials: what reaches the LB, which events count, how fast trials are pushed,
// and restarts. Most tests run in-process: the publisher records versions (no push loop) and events
// go straight to ingest().
import { strict as assert } from "node:assert";
import { afterEach, beforeEach, describe, test } from "node:test";
import { armOf } from "@meridian/tuner";
import type { LbConfig, TelemetryEvent } from "@meridian/protocol";
import { desc, eq } from "drizzle-orm";
import type { Store } from "@meridian/db";
import { DomainError } from "../errors";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";
import { startFakeLb } from "../testing/fake-lb";
import { telemetryEvent } from "../testing/telemetry-event";
import { createLb, setPolicy } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { resetTuner, setManualWeights, startTuner, stopTuner, tunerByLb, updateTuner } from "../services/tuner";
import { ConsoleRuntime } from "./runtime";

const LB = "lb-a";
/** Small trials so a test decides one in tens of events. */
const SMALL_TRIALS = { trial: { lookEvery: 10, maxSamples: 120 }, guardrails: { enabled: true, e2eRatio: 0.25, maxShare: 1, maxErrorRate: 0.5 } };

async function setup(h: Harness, url = "http://127.0.0.1:9"): Promise<void> {
  await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
  await createLb(h.rt, OPERATOR, { name: LB, url, region: "us-ashburn" });
  await createReplica(h.rt, OPERATOR, { name: "r1", url: "http://127.0.0.1:9", region: "us-ashburn", engine: "sglang", model: "m", homeLbId: LB });
  await createReplica(h.rt, OPERATOR, { name: "r2", url: "http://127.0.0.1:10", region: "us-ashburn", engine: "vllm", model: "m", homeLbId: LB });
}

let seq = 0;
let session = 0;
function event(partial: Partial<TelemetryEvent> = {}): TelemetryEvent {
  seq += 1;
  return telemetryEvent({ seq, time: Date.now(), lbId: LB, region: "us-ashburn", replicaId: seq % 2 ? "r1" : "r2", ...partial });
}

/** Events of the running trial, as the LB would send them: each its own session, tagged with its arm. */
async function trialEvents(
  rt: ConsoleRuntime,
  n: number,
  ttft: (arm: "incumbent" | "candidate", i: number) => number,
  partial: Partial<TelemetryEvent> = {},
): Promise<TelemetryEvent[]> {
  const trial = (await rt.tuners.ensure(LB)).tuner.current().trial;
  assert.ok(trial, "a trial is running");
  return Array.from({ length: n }, (_, i) => {
    const sessionKey = `s${(session += 1)}`;
    const arm = armOf(sessionKey, trial.salt, trial.share);
    return event({ trialId: trial.id, arm, triggered: true, sessionKey, ttftMs: ttft(arm, i), ...partial });
  });
}

/** Feeds the events as the hub would, and waits until the tuners observed them. */
const ingest = async (rt: ConsoleRuntime, events: TelemetryEvent[]) => {
  for (const e of events) rt.telemetry.ingest(LB, e);
  await rt.tuners.idle();
};

/** Until the running trial is decided: the candidate clearly slower, so it is rejected within a look or two. */
async function decideTrial(rt: ConsoleRuntime): Promise<void> {
  const before = (await tunerByLb(rt, { lbId: LB })).steps.length;
  for (let round = 0; round < 10 && (await tunerByLb(rt, { lbId: LB })).steps.length === before; round += 1) {
    await ingest(rt, await trialEvents(rt, 10, (arm, i) => (arm === "candidate" ? 900 : 100) + i));
  }
  assert.equal((await tunerByLb(rt, { lbId: LB })).steps.length, before + 1, "the trial was decided");
}

const latestConfig = async (rt: ConsoleRuntime) => {
  const { lbConfigs } = rt.store.tables;
  const [row] = await rt.store.db.select().from(lbConfigs).where(eq(lbConfigs.lbId, LB)).orderBy(desc(lbConfigs.version)).limit(1);
  return JSON.parse(row!.json) as LbConfig;
};

describe("TunerService (in-process)", () => {
  let h: Harness;
  let clock: number;
  let timers: { at: number; fn: () => void }[];
  beforeEach(async () => {
    clock = 1_000_000;
    timers = [];
    // A fake clock and timer for the push rate limit.
    const tunerClock = {
      now: () => clock,
      setTimer: (fn: () => void, ms: number) => {
        const timer = { at: clock + ms, fn };
        timers.push(timer);
        return () => void timers.splice(timers.indexOf(timer), 1);
      },
    };
    h = await createHarness({ tunerClock });
    await setup(h);
    await h.rt.tuners.start();
  });
  afterEach(() => h.close());

  /** Moves the fake clock on, fires the timers due, and waits for the tuner work they queued. */
  const advance = async (ms: number) => {
    clock += ms;
    for (const timer of timers.filter((t) => t.at <= clock)) {
      timers.splice(timers.indexOf(timer), 1);
      timer.fn();
    }
    await h.rt.tuners.idle();
  };

  test("starting publishes the trial in the LB's config; its samples decide it; the next trial follows", async () => {
    await updateTuner(h.rt, OPERATOR, { lbId: LB, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, { lbId: LB });
    const started = await tunerByLb(h.rt, { lbId: LB });
    assert.equal(started.evaluation, "ab");
    assert.equal(started.role, "trial");
    assert.ok(started.trial);
    const config = await latestConfig(h.rt);
    assert.deepEqual(config.trial?.id, started.trial.id);
    assert.deepEqual(config.trial?.candidate, started.trial.candidate);
    assert.deepEqual(config.weights, started.weights);
    assert.equal(
      (await h.rt.store.db.select().from(h.rt.store.tables.loadBalancers).limit(1))[0]!.trialJson,
      JSON.stringify((await h.rt.tuners.ensure(LB)).tuner.current().trial),
    );

    await ingest(h.rt, await trialEvents(h.rt, 10, (arm) => (arm === "candidate" ? 900 : 100)));
    const decided = await tunerByLb(h.rt, { lbId: LB });
    assert.equal(decided.steps.length, 1);
    const step = decided.steps[0]!;
    assert.equal(step.kind, "trial");
    assert.equal(step.accepted, false);
    assert.equal(step.decision, "reject-worse");
    assert.match(step.reason!, /p95 900 ms vs 100 ms/);
    assert.equal(decided.lastDecision?.decision, "reject-worse");
    assert.notEqual(decided.trial!.id, started.trial.id, "a new trial runs");
    const row = (await h.rt.store.db.select().from(h.rt.store.tables.tunerSteps).limit(1))[0]!;
    assert.equal(JSON.parse(row.trialJson!).decision, "reject-worse");
  });

  test("an LB switched to a policy that ignores the weights pauses its tuner, with the reason; back on gorgo it resumes from the incumbent", async () => {
    await updateTuner(h.rt, OPERATOR, { lbId: LB, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, { lbId: LB });
    await decideTrial(h.rt);
    const before = await tunerByLb(h.rt, { lbId: LB });
    assert.equal(before.paused, null);
    assert.ok(before.trial);

    await setPolicy(h.rt, OPERATOR, { id: LB, policy: "least-load", crossRegion: "direct" });
    const paused = await tunerByLb(h.rt, { lbId: LB });
    assert.match(paused.paused ?? "", /least-load.*does not use W_rtt\/W_queue/);
    assert.equal(paused.running, true, "still switched on: it resumes by itself");
    assert.equal(paused.trial, null, "no trial runs while paused");
    assert.deepEqual(paused.weights, before.incumbent);
    const pausedConfig = await latestConfig(h.rt);
    assert.equal(pausedConfig.policy, "least-load");
    assert.equal(pausedConfig.trial, undefined, "the trial is off the LB at once, without waiting for the push rate limit");
    assert.deepEqual(pausedConfig.weights, before.incumbent);
    const versionsWhilePaused = pausedConfig.version;

    // Least-load traffic for a long while: nothing counts, nothing moves, nothing is pushed.
    await ingest(
      h.rt,
      Array.from({ length: 500 }, (_, i) => event({ sessionKey: `p${i}`, ttftMs: 100 + (i % 7) * 300 })),
    );
    await advance(60_000);
    const still = await tunerByLb(h.rt, { lbId: LB });
    assert.equal(still.steps.length, before.steps.length);
    assert.deepEqual(still.weights, before.incumbent);
    assert.equal((await latestConfig(h.rt)).version, versionsWhilePaused);

    // A restart keeps the pause (the policy has not changed).
    const rt2 = new ConsoleRuntime(h.rt.database, h.rt.options);
    await rt2.tuners.start();
    assert.match((await tunerByLb(rt2, { lbId: LB })).paused ?? "", /least-load/);
    assert.equal((await tunerByLb(rt2, { lbId: LB })).trial, null);

    await setPolicy(h.rt, OPERATOR, { id: LB, policy: "gorgo", crossRegion: "direct" });
    const resumed = await tunerByLb(h.rt, { lbId: LB });
    assert.equal(resumed.paused, null);
    assert.deepEqual(resumed.incumbent, before.incumbent, "resumes from its incumbent");
    assert.deepEqual(resumed.weights, before.incumbent);
    assert.ok(resumed.trial, "a trial runs again");
    assert.equal((await latestConfig(h.rt)).trial?.id, resumed.trial.id);
    await decideTrial(h.rt);
    assert.equal((await tunerByLb(h.rt, { lbId: LB })).steps.length, before.steps.length + 1);
  });

  test("client errors, client aborts and events of other trials are not samples; a flood of 400s pushes nothing", async () => {
    await updateTuner(h.rt, OPERATOR, { lbId: LB, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, { lbId: LB });
    const versions = async () => (await h.rt.store.db.select().from(h.rt.store.tables.lbConfigs)).length;
    const before = await versions();
    await ingest(h.rt, await trialEvents(h.rt, 96, () => 0, { status: 400, error: "bad request", ttftMs: null }));
    await ingest(h.rt, await trialEvents(h.rt, 30, () => 0, { status: 499, error: "client closed request", ttftMs: null }));
    await ingest(h.rt, await trialEvents(h.rt, 30, () => 100, { trialId: "1-feedface" }));
    await ingest(
      h.rt,
      Array.from({ length: 30 }, () => event({ ttftMs: 100 })),
    );
    const after = await tunerByLb(h.rt, { lbId: LB });
    assert.equal(after.steps.length, 0, "no candidate rejected");
    assert.deepEqual(after.trial!.samples, { incumbent: 0, candidate: 0 });
    assert.equal(await versions(), before, "no config pushed");
    // A 5xx is the routing's business: it counts, as a failure.
    await ingest(h.rt, await trialEvents(h.rt, 4, () => 100, { status: 502, error: "upstream failed", ttftMs: null }));
    const counted = (await tunerByLb(h.rt, { lbId: LB })).trial!.samples;
    assert.equal(counted.incumbent + counted.candidate, 4);
  });

  test("a step the database refused to record is dropped: the tuner goes on with the trial the LB runs, and records its next step", async () => {
    await updateTuner(h.rt, OPERATOR, { lbId: LB, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, { lbId: LB });
    const started = (await tunerByLb(h.rt, { lbId: LB })).trial!;
    // The next write of a step fails, as it does while another process holds SQLite's lock or a
    // PostgreSQL connection drops; every other write goes through.
    const store = h.rt.store as { transaction: Store["transaction"] };
    const transaction = store.transaction.bind(store);
    let refusals = 1;
    store.transaction = (work) =>
      transaction((tx) => {
        const db = Object.create(tx.db) as typeof tx.db;
        db.insert = ((table: Parameters<typeof tx.db.insert>[0]) => {
          if (table !== tx.tables.tunerSteps || refusals === 0) return tx.db.insert(table);
          refusals -= 1;
          throw Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
        }) as typeof tx.db.insert;
        return work({ ...tx, db } as typeof tx);
      });
    await ingest(h.rt, await trialEvents(h.rt, 10, (arm) => (arm === "candidate" ? 900 : 100)));
    assert.equal(refusals, 0, "the step's write was refused");
    const after = await tunerByLb(h.rt, { lbId: LB });
    assert.equal(after.steps.length, 0);
    assert.equal(after.trial?.id, started.id, "the tuner measures the trial the database holds");
    assert.equal((await latestConfig(h.rt)).trial?.id, started.id, "which the LB runs");
    await decideTrial(h.rt);
    assert.equal((await tunerByLb(h.rt, { lbId: LB })).steps[0]?.step, 1, "the next step is recorded as the run's first");
  });

  test("a trial cap too small for any trial to accept is refused with the smallest that can, and changes nothing", async () => {
    const before = (await tunerByLb(h.rt, { lbId: LB })).trialSettings;
    await assert.rejects(
      () => updateTuner(h.rt, OPERATOR, { lbId: LB, trial: { maxSamples: 100 } }),
      (error: unknown) => error instanceof DomainError && error.kind === "invalid" && /maxSamples: must be at least 118 with share 0\.5/.test(error.message),
    );
    assert.deepEqual((await tunerByLb(h.rt, { lbId: LB })).trialSettings, before);
  });

  test("trial pushes are rate-limited: a trial decided sooner waits, then goes out", async () => {
    await updateTuner(h.rt, OPERATOR, { lbId: LB, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, { lbId: LB });
    const pushedTrials = async () =>
      new Set((await h.rt.store.db.select().from(h.rt.store.tables.lbConfigs)).map((row) => (JSON.parse(row.json) as LbConfig).trial?.id)).size;
    await decideTrial(h.rt);
    const first = await pushedTrials();
    const pending = (await h.rt.tuners.ensure(LB)).tuner.current();
    assert.equal(pending.version, null, "the next trial is decided on but not published yet");
    assert.equal((await tunerByLb(h.rt, { lbId: LB })).trial?.published, false);
    await advance(1_000);
    assert.equal(await pushedTrials(), first, "still within the interval");
    await advance(4_000);
    assert.equal(await pushedTrials(), first + 1, "published once the interval passed");
    assert.equal((await latestConfig(h.rt)).trial?.id, pending.trial!.id);
  });

  test("stop freezes the incumbent and takes the trial out of the config; stopped means stopped", async () => {
    await updateTuner(h.rt, OPERATOR, { lbId: LB, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, { lbId: LB });
    await ingest(h.rt, await trialEvents(h.rt, 5, () => 100));
    await stopTuner(h.rt, OPERATOR, { lbId: LB });
    const stopped = await tunerByLb(h.rt, { lbId: LB });
    assert.equal(stopped.mode, "static");
    assert.equal(stopped.running, false);
    assert.equal(stopped.trial, null);
    assert.equal((await latestConfig(h.rt)).trial, undefined);
    assert.equal((await h.rt.store.db.select().from(h.rt.store.tables.loadBalancers).limit(1))[0]!.trialJson, null);
    const steps = stopped.steps.length;
    await ingest(
      h.rt,
      Array.from({ length: 40 }, () => event()),
    );
    assert.equal((await tunerByLb(h.rt, { lbId: LB })).steps.length, steps);
  });

  test("manual weights take the trial down; start after manual trials candidates against the operator's weights", async () => {
    await updateTuner(h.rt, OPERATOR, { lbId: LB, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, { lbId: LB });
    await setManualWeights(h.rt, OPERATOR, { lbId: LB, weights: { rtt: 0.8, queue: 0.2 } });
    assert.deepEqual((await latestConfig(h.rt)).weights, { rtt: 0.8, queue: 0.2 });
    assert.equal((await latestConfig(h.rt)).trial, undefined);
    await advance(10_000);
    await startTuner(h.rt, OPERATOR, { lbId: LB });
    const started = await tunerByLb(h.rt, { lbId: LB });
    assert.deepEqual(started.weights, { rtt: 0.8, queue: 0.2 });
    assert.deepEqual(started.trial?.incumbent, { rtt: 0.8, queue: 0.2 });
    assert.deepEqual((await latestConfig(h.rt)).trial?.id, started.trial?.id);
  });

  test("reset starts a new run from the initial weights with a fresh trial", async () => {
    const initial = (await tunerByLb(h.rt, { lbId: LB })).weights;
    await updateTuner(h.rt, OPERATOR, { lbId: LB, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, { lbId: LB });
    await decideTrial(h.rt);
    const before = await tunerByLb(h.rt, { lbId: LB });
    await advance(10_000);
    await resetTuner(h.rt, OPERATOR, { lbId: LB });
    const after = await tunerByLb(h.rt, { lbId: LB });
    assert.notEqual(after.runId, before.runId);
    assert.deepEqual(after.weights, initial);
    assert.equal(after.steps.length, 0);
    assert.equal(after.running, true, "a running tuner keeps running after a reset");
    assert.equal((await latestConfig(h.rt)).trial?.id, after.trial?.id);
  });

  test("a reset of a tuner that its LB's policy pauses publishes no trial: the new run is paused from the first", async () => {
    await updateTuner(h.rt, OPERATOR, { lbId: LB, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, { lbId: LB });
    await setPolicy(h.rt, OPERATOR, { id: LB, policy: "round-robin", crossRegion: "direct" });
    const before = await tunerByLb(h.rt, { lbId: LB });
    assert.match(before.paused ?? "", /round-robin/);
    const withTrial = async () =>
      (await h.rt.store.db.select().from(h.rt.store.tables.lbConfigs)).filter((row) => (JSON.parse(row.json) as LbConfig).trial !== undefined).length;
    const trialVersions = await withTrial();
    await resetTuner(h.rt, OPERATOR, { lbId: LB });
    assert.equal(await withTrial(), trialVersions, "no version carrying a trial was published to the round-robin LB");
    const after = await tunerByLb(h.rt, { lbId: LB });
    assert.notEqual(after.runId, before.runId);
    assert.match(after.paused ?? "", /round-robin/);
    assert.equal(after.running, true, "still switched on: it resumes by itself");
    assert.equal(after.trial, null);
  });

  test("other LBs' requests count toward the fleet-share guardrail, not as samples", async () => {
    await updateTuner(h.rt, OPERATOR, { lbId: LB, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, { lbId: LB });
    for (let i = 0; i < 20; i += 1) await h.rt.tuners.observe(event({ lbId: "lb-b", replicaId: "r-remote" }));
    const state = (await h.rt.tuners.ensure(LB)).tuner.state();
    assert.deepEqual(state.trial!.peerCounts, { "r-remote": 20 });
    assert.equal(state.trial!.samples.length, 0);
  });

  test("paper mode still runs GORGO's trailing windows", async () => {
    await updateTuner(h.rt, OPERATOR, { lbId: LB, evaluation: "paper", window: 8, hop: 8 });
    await startTuner(h.rt, OPERATOR, { lbId: LB });
    const d = await tunerByLb(h.rt, { lbId: LB });
    assert.equal(d.role, "remeasure");
    assert.equal(d.trial, null);
    await ingest(
      h.rt,
      Array.from({ length: 8 }, () => event({ configVersion: d.boundVersion! })),
    );
    assert.equal((await tunerByLb(h.rt, { lbId: LB })).steps[0]?.kind, "remeasure");
  });
});

describe("TunerService across a console restart", () => {
  test("after an LB is added (a topology push), a restarted console keeps stepping on the same trial", async () => {
    const h = await createHarness({ minTrialPushIntervalMs: 0 });
    try {
      await setup(h);
      await h.rt.tuners.start();
      await updateTuner(h.rt, OPERATOR, { lbId: LB, ...SMALL_TRIALS });
      await startTuner(h.rt, OPERATOR, { lbId: LB });
      await decideTrial(h.rt);
      // A new LB changes every LB's peers: a new config version, which must carry the running trial.
      await createLb(h.rt, OPERATOR, { name: "lb-b", url: "http://127.0.0.1:11", region: "us-ashburn" });
      const live = await tunerByLb(h.rt, { lbId: LB });
      const latest = await latestConfig(h.rt);
      assert.equal(latest.trial?.id, live.trial!.id, "the topology push kept the trial");
      assert.equal(live.boundVersion, latest.version, "and the tuner is bound to it");
      const stored = JSON.parse(
        (await h.rt.store.db.select().from(h.rt.store.tables.tunerRuns).where(eq(h.rt.store.tables.tunerRuns.lbId, LB)).limit(1))[0]!.stateJson!,
      );
      assert.equal(stored.current.version, latest.version, "the binding was persisted");

      // Kill (drop the runtime) and restart on the same database.
      const rt2 = new ConsoleRuntime(h.rt.database, h.rt.options);
      await rt2.tuners.start();
      const resumed = await tunerByLb(rt2, { lbId: LB });
      assert.equal(resumed.runId, live.runId);
      assert.equal(resumed.running, true);
      assert.equal(resumed.trial?.id, live.trial!.id);
      assert.equal(resumed.steps.length, 1);
      // The LB keeps sending events of its current trial: steps continue.
      await decideTrial(rt2);
      await decideTrial(rt2);
      assert.equal((await tunerByLb(rt2, { lbId: LB })).steps.length, 3);
    } finally {
      await h.close();
    }
  });
});

test("the trial reaches the LB itself and the LB's tagged events decide it (ConfigPublisher → PUT /admin/config, telemetry stream)", async () => {
  const h = await createHarness();
  const lb = await startFakeLb({ id: LB, region: "us-ashburn", token: TEST_TOKEN });
  try {
    await setup(h, lb.url);
    await h.rt.start();
    await waitFor(() => lb.version > 0, 5_000, "first config");
    await updateTuner(h.rt, OPERATOR, { lbId: LB, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, { lbId: LB });
    const trial = (await h.rt.tuners.ensure(LB)).tuner.current().trial!;
    await waitFor(() => lb.configs.at(-1)?.trial?.id === trial.id, 5_000, "trial live on the LB");
    for (let i = 0; i < 40 && (await tunerByLb(h.rt, { lbId: LB })).steps.length === 0; i += 1) {
      const sessionKey = `lb-s${i}`;
      const arm = armOf(sessionKey, trial.salt, trial.share);
      lb.emit({ trialId: trial.id, arm, triggered: true, sessionKey, ttftMs: arm === "candidate" ? 900 : 100, replicaId: i % 2 ? "r1" : "r2" });
      await waitFor(() => h.rt.telemetry.status()[0]?.lastSeq === i + 1, 5_000, `event ${i + 1}`);
    }
    assert.equal((await tunerByLb(h.rt, { lbId: LB })).steps[0]?.decision, "reject-worse");
    await stopTuner(h.rt, OPERATOR, { lbId: LB });
    const stopped = await tunerByLb(h.rt, { lbId: LB });
    await waitFor(() => lb.version >= stopped.boundVersion!, 5_000, "stopped config live");
    assert.equal(lb.configs.at(-1)?.trial, undefined);
  } finally {
    await h.close();
    await lb.close();
  }
});
