import { strict as assert } from "node:assert";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { databaseNowMs } from "@meridian/db";
import { eq, sql } from "drizzle-orm";
import pino from "pino";
import { createHarness, OPERATOR, waitFor, type Harness } from "../testing/harness";
import { loggedLines } from "../testing/log-lines";
import { experimentStatus, listExperiments, listTraces, runExperiment, saveExperiment } from "../services/experiments";
import { ExperimentRunner, simArgs } from "./experiment-runner";
import { parseProgress } from "./experiment-sim";

/** A run that `runner` is running, its lease ending `leaseMs` from now on the database's clock. */
async function insertRunningExperiment(store: Harness["rt"]["store"], id: string, runner: string, leaseMs: number): Promise<void> {
  await store.db.insert(store.tables.experiments).values({
    id,
    traceId: "bundled",
    paramsJson: "{}",
    state: "running",
    createdBy: "admin",
    createdAt: Date.now(),
    runner,
    runnerExpiresAt: sql`${databaseNowMs(store.dialect)} + ${leaseMs}`,
  });
}

test("progress lines of meridian-sim", () => {
  assert.equal(parseProgress("progress 50/200 gorgo"), 0.25);
  assert.equal(parseProgress("progress 3/3 random"), 1);
  assert.equal(parseProgress("42%"), 0.42);
  assert.equal(parseProgress("loading trace"), null);
});

test("a what-if grid runs meridian-sim grid with its preset, prompt factor and points; a comparison runs compare", () => {
  assert.deepEqual(
    simArgs(
      { kind: "grid", traceId: "t", timeScale: 0.05, policies: [], fromMs: 0, toMs: 60_000, grid: { preset: "global", promptFactor: 0.05, points: 5 } },
      "/t.jsonl",
    ),
    [
      "grid",
      "--trace",
      "/t.jsonl",
      "--time-scale",
      "0.05",
      "--preset",
      "global",
      "--prompt-factor",
      "0.05",
      "--points",
      "5",
      "--from-ms",
      "0",
      "--to-ms",
      "60000",
    ],
  );
  assert.deepEqual(simArgs({ traceId: "t", timeScale: 2, policies: ["gorgo", "random"] }, "/t.jsonl"), [
    "compare",
    "--trace",
    "/t.jsonl",
    "--policies",
    "gorgo,random",
    "--time-scale",
    "2",
  ]);
});

describe("experiments", () => {
  let h: Harness;
  let args: string[] = [];
  const scratch = mkdtempSync(join(tmpdir(), "meridian-fake-sim-"));
  before(async () => {
    // A stand-in for meridian-sim: progress on stderr, one JSON object on stdout; exit 2 with a
    // usage line when asked for the policy "least-load". After the first progress line it waits
    // until the test creates the file "go" in its working directory, so the test can look at the
    // run half-way (bounded: it gives up after 60 s).
    const fake = join(scratch, "fake-sim.mjs");
    writeFileSync(
      fake,
      `import { existsSync } from "node:fs";
       const args = process.argv.slice(2);
       if (args.includes("least-load")) { process.stderr.write("meridian-sim: error: --trace: nope\\n"); process.exit(2); }
       process.stderr.write("progress 1/2 gorgo\\n");
       const startedAt = Date.now();
       const poll = setInterval(() => {
         if (Date.now() - startedAt > 60000) process.exit(3);
         if (!existsSync("go")) return;
         clearInterval(poll);
         process.stderr.write("progress 2/2 gorgo\\n");
         process.stdout.write(JSON.stringify({ policies: [{ name: "gorgo", args }] }) + "\\n");
       }, 10);`,
    );
    h = await createHarness({
      simCommand: (a) => {
        args = a;
        return { command: process.execPath, args: [fake, ...a], cwd: scratch };
      },
    });
  });
  after(async () => {
    await h.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  test("the bundled trace is offered", async () => {
    const traces = await listTraces(h.rt);
    assert.equal(traces[0]?.id, "bundled");
    assert.match(traces[0]!.path, /mooncake-conversation-first500\.jsonl$/);
  });

  test("a run spawns compare --json, follows progress and stores the result", async () => {
    const { id } = await runExperiment(h.rt, OPERATOR, { traceId: "bundled", timeScale: 2, fromMs: 0, toMs: 60_000, policies: ["gorgo", "random"] });
    assert.deepEqual(args.slice(0, 1), ["compare"]);
    assert.ok(args.includes("--json"));
    assert.equal(args[args.indexOf("--policies") + 1], "gorgo,random");
    assert.equal(args[args.indexOf("--time-scale") + 1], "2");
    assert.equal(args[args.indexOf("--to-ms") + 1], "60000");
    // Half-way: the first progress line is stored while the simulator still runs.
    const halfway = await waitFor(async () => {
      const status = await experimentStatus(h.rt, { id });
      return status.progress > 0 ? status : null;
    });
    assert.equal(halfway.state, "running");
    assert.equal(halfway.progress, 0.5);
    writeFileSync(join(scratch, "go"), "");
    const done = await waitFor(async () => {
      const status = await experimentStatus(h.rt, { id });
      return status.state === "done" ? status : null;
    });
    assert.equal(done.progress, 1);
    assert.equal((done.result as { policies: { name: string }[] }).policies[0]?.name, "gorgo");
    await saveExperiment(h.rt, OPERATOR, { id, name: "baseline" });
    assert.equal((await listExperiments(h.rt))[0]?.name, "baseline");
  });

  test("a failing run reports the simulator's error line", async () => {
    const { id } = await runExperiment(h.rt, OPERATOR, { traceId: "bundled", timeScale: 1, policies: ["least-load"] });
    const failed = await waitFor(async () => {
      const status = await experimentStatus(h.rt, { id });
      return status.state === "failed" ? status : null;
    });
    assert.equal(failed.error, "meridian-sim: error: --trace: nope");
    await assert.rejects(
      async () => await runExperiment(h.rt, OPERATOR, { traceId: "nope", timeScale: 1, policies: ["gorgo"] }),
      /trace "nope" does not exist/,
    );
  });

  test("a console whose clock runs an hour ahead leaves a live console's run alone, and marks an expired one interrupted", async () => {
    const { store } = h.rt;
    const { experiments } = store.tables;
    const ahead = new ExperimentRunner({
      store,
      log: pino({ level: "silent" }),
      runnerId: "console-ahead",
      now: () => Date.now() + 3_600_000,
      repoRoot: process.cwd(),
      simCommand: () => ({ command: process.execPath, args: ["-e", ""], cwd: process.cwd() }),
      traceDirs: [],
    });
    const id = "exp-of-another-console";
    // Another console's run, vouched for 30 s on the database's clock (as its runner writes it).
    await insertRunningExperiment(store, id, "console-live", 30_000);
    const stateOf = async () => (await store.db.select().from(experiments).where(eq(experiments.id, id)))[0];

    await ahead.recoverInterrupted();
    assert.equal((await stateOf())?.state, "running", "the live console's run is left alone");

    // Its console stopped renewing: the lease has passed on the database's clock.
    await store.db
      .update(experiments)
      .set({ runnerExpiresAt: sql`${databaseNowMs(store.dialect)} - 1` })
      .where(eq(experiments.id, id));
    await ahead.recoverInterrupted();
    const row = await stateOf();
    assert.equal(row?.state, "failed");
    assert.equal(row?.error, "interrupted: its console stopped");
  });

  test("a run that ends while the database refuses writes keeps its outcome and records it once the database takes writes again", async () => {
    const { store } = h.rt;
    const { experiments } = store.tables;
    // The database refuses every UPDATE while `refusing` (another process holds SQLite's write
    // lock, PostgreSQL restarts): the store as the runner sees it, everything else as is.
    let refusing = false;
    const refused = () => ({ set: () => ({ where: () => Promise.reject(new Error("SQLITE_BUSY: database is locked")) }) });
    const db = new Proxy(store.db, {
      get: (target, key) => (key === "update" && refusing ? refused : Reflect.get(target, key, target)),
    });
    const { log, lines } = loggedLines("info");
    const cwd = join(scratch, "refused");
    mkdirSync(cwd);
    const runner = new ExperimentRunner({
      store: { ...store, db },
      log,
      runnerId: "console-refused",
      repoRoot: h.rt.options.repoRoot,
      simCommand: (a) => ({ command: process.execPath, args: [join(scratch, "fake-sim.mjs"), ...a], cwd }),
      traceDirs: [],
    });
    const stateOf = async () => (await store.db.select().from(experiments).where(eq(experiments.id, id)))[0];
    const id = await runner.start({ traceId: "bundled", timeScale: 1, policies: ["gorgo"] }, "admin");
    try {
      refusing = true;
      writeFileSync(join(cwd, "go"), "");
      // The simulation ended, and its outcome was refused twice: it is being written again.
      await waitFor(() => lines.filter((line) => line.msg.startsWith("experiment outcome not recorded")).length >= 2, 15_000, "two refused writes");
      assert.equal((await stateOf())?.state, "running");
      refusing = false;
      const row = await waitFor(async () => {
        const current = await stateOf();
        return current?.state === "done" ? current : null;
      });
      assert.equal(row.error, null);
      assert.equal(row.progress, 1);
      assert.equal((JSON.parse(row.resultJson ?? "null") as { policies: { name: string }[] }).policies[0]?.name, "gorgo");
      assert.equal(row.runnerExpiresAt, null);
    } finally {
      await runner.stop();
    }
    assert.equal((await stateOf())?.state, "done", "stopping the console afterwards leaves the recorded outcome alone");
  });

  test("a result write the database refuses for good is given up after its attempts, not retried for as long as the console runs", async () => {
    const { store } = h.rt;
    const { experiments } = store.tables;
    // A refusal that does not clear (a value the database will never take).
    const refused = () => ({ set: () => ({ where: () => Promise.reject(new Error("invalid byte sequence for encoding UTF8: 0x00")) }) });
    let refusing = false;
    const db = new Proxy(store.db, { get: (target, key) => (key === "update" && refusing ? refused : Reflect.get(target, key, target)) });
    const { log, lines } = loggedLines("info");
    const cwd = join(scratch, "refused-for-good");
    mkdirSync(cwd);
    const runner = new ExperimentRunner({
      store: { ...store, db },
      log,
      runnerId: "console-refused-for-good",
      repoRoot: h.rt.options.repoRoot,
      simCommand: (a) => ({ command: process.execPath, args: [join(scratch, "fake-sim.mjs"), ...a], cwd }),
      traceDirs: [],
      outcomeAttempts: 3,
    });
    const id = await runner.start({ traceId: "bundled", timeScale: 1, policies: ["gorgo"] }, "admin");
    try {
      refusing = true;
      writeFileSync(join(cwd, "go"), "");
      await waitFor(() => lines.some((line) => line.msg.includes("given up")), 15_000, "the write given up");
      assert.equal(lines.filter((line) => line.msg.startsWith("experiment outcome not recorded")).length, 3);
      const [row] = await store.db.select().from(experiments).where(eq(experiments.id, id));
      assert.equal(row?.state, "running", "left for the sweep to mark interrupted, as a run whose console died");
    } finally {
      await runner.stop();
    }
  });

  test("a console restarted with the same id (a fixed MERIDIAN_CONSOLE_ID) marks the run its killed process left running interrupted", async () => {
    const { store } = h.rt;
    const { experiments } = store.tables;
    const id = "exp-of-a-killed-process";
    // What console-fixed left behind when it was killed mid-run: its lease has passed.
    await insertRunningExperiment(store, id, "console-fixed", -1);
    // The new process runs a simulation of its own (one that runs until stopped), whose lease has
    // lapsed too (a renewal that stalled): it is still running, so it is left alone.
    const restarted = new ExperimentRunner({
      store,
      log: pino({ level: "silent" }),
      runnerId: "console-fixed",
      repoRoot: h.rt.options.repoRoot,
      simCommand: () => ({ command: process.execPath, args: ["-e", "setInterval(() => {}, 1000)"], cwd: process.cwd() }),
      traceDirs: [],
    });
    try {
      const live = await restarted.start({ traceId: "bundled", timeScale: 1, policies: ["gorgo"] }, "admin");
      await store.db
        .update(experiments)
        .set({ runnerExpiresAt: sql`${databaseNowMs(store.dialect)} - 1` })
        .where(eq(experiments.id, live));
      await restarted.recoverInterrupted();
      const stateOf = async (of: string) => (await store.db.select().from(experiments).where(eq(experiments.id, of)))[0];
      assert.equal((await stateOf(id))?.state, "failed");
      assert.equal((await stateOf(id))?.error, "interrupted: its console stopped");
      assert.equal((await stateOf(live))?.state, "running", "its own live run is left alone");
    } finally {
      await restarted.stop();
    }
  });
});
