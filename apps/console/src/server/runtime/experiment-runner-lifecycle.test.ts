// An experiment's life around its console's: a restarted console does not vouch for its killed
// predecessor's runs, a run is audited or not started at all, a run started as the console stops
// starts nothing, a simulator dies with a console killed outright, and a failed run says why.
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { databaseNowMs, type Queryable } from "@meridian/db";
import { eq, sql } from "drizzle-orm";
import pino from "pino";
import { listExperiments, runExperiment, saveExperiment } from "../services/experiments";
import { createHarness, type Harness, OPERATOR, waitFor } from "../testing/harness";
import { ExperimentRunner, type SimCommand } from "./experiment-runner";

/** A simulator that runs until it is killed, blocking synchronously as meridian-sim does (no timer of
 * its own could notice anything). */
const BLOCKING_SIM = "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000)";
const script =
  (code: string): SimCommand =>
  () => ({ command: process.execPath, args: ["-e", code], cwd: process.cwd() });
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const GORGO = { traceId: "bundled", timeScale: 1, policies: ["gorgo"] };

describe("experiments and their console's life", () => {
  let h: Harness;
  const runners: ExperimentRunner[] = [];
  const runner = (runnerId: string, simCommand: SimCommand, store = h.rt.store) => {
    const r = new ExperimentRunner({ store, log: pino({ level: "silent" }), runnerId, repoRoot: h.rt.options.repoRoot, simCommand, traceDirs: [] });
    runners.push(r);
    return r;
  };
  const rowOf = async (id: string) => (await h.rt.store.db.select().from(h.rt.store.tables.experiments).where(eq(h.rt.store.tables.experiments.id, id)))[0];
  before(async () => {
    h = await createHarness({ simCommand: script(BLOCKING_SIM) });
  });
  after(async () => {
    for (const r of runners) await r.stop();
    await h.close();
  });

  test("a console restarted with the same id renews only its own runs: the run its killed process left is marked interrupted", async () => {
    const { store } = h.rt;
    const leftover = "exp-left-by-the-killed-process";
    await store.db.insert(store.tables.experiments).values({
      id: leftover,
      traceId: "bundled",
      paramsJson: "{}",
      state: "running",
      createdBy: "admin",
      createdAt: Date.now(),
      runner: "console-fixed",
      runnerExpiresAt: sql`${databaseNowMs(store.dialect)} - 1000`,
    });
    const restarted = runner("console-fixed", script(BLOCKING_SIM));
    const own = await restarted.start(GORGO, "admin");
    // One round of the sweeper (startSweeping runs it every 10 s): renew this process's runs, sweep the rest.
    await (restarted as unknown as { sweep(): Promise<void> }).sweep();
    const row = await rowOf(leftover);
    assert.equal(row?.state, "failed", `the killed process's run is "${row?.state}"`);
    assert.equal(row?.error, "interrupted: its console stopped");
    assert.equal((await rowOf(own))?.state, "running", "its own run is left running");
    await restarted.stop();
  });

  test("a run whose audit row the database refuses is not started: no row, no simulator, and the operator is told", async () => {
    const { store } = h.rt;
    let spawned = 0;
    const refuseAudit = <Q extends Queryable>(q: Q): Q => ({
      ...q,
      db: new Proxy(q.db, {
        get: (target, key) =>
          key === "insert"
            ? (table: unknown) =>
                table === q.tables.auditLog ? { values: () => Promise.reject(new Error("SQLITE_BUSY: database is locked")) } : target.insert(table as never)
            : Reflect.get(target, key, target),
      }),
    });
    const refusing = { ...refuseAudit(store), transaction: <T>(work: (tx: Queryable) => Promise<T>) => store.transaction((tx) => work(refuseAudit(tx))) };
    const r = runner(
      "console-audit",
      () => {
        spawned++;
        return script(BLOCKING_SIM)([]);
      },
      refusing,
    );
    const rt = Object.create(h.rt, { store: { value: refusing }, experiments: { value: r } }) as typeof h.rt;
    const before = (await store.db.select().from(store.tables.experiments)).length;
    await assert.rejects(runExperiment(rt, OPERATOR, GORGO), /locked/);
    assert.equal((await store.db.select().from(store.tables.experiments)).length, before, "no run row was left behind");
    assert.equal(spawned, 0, "no simulator was started");
  });

  test("a run started as the console stops starts no simulator, and its row is marked interrupted", async () => {
    const spawned: string[] = [];
    const r = runner("console-stopping", (a) => {
      spawned.push(a[0] ?? "");
      return script(BLOCKING_SIM)(a);
    });
    const ids = new Set((await h.rt.store.db.select().from(h.rt.store.tables.experiments)).map((x) => x.id));
    const starting = r.start(GORGO, "admin");
    await r.stop(); // SIGTERM arrives while the run's row is being written
    await assert.rejects(starting, /the console is stopping/);
    assert.deepEqual(spawned, []);
    const [row] = (await h.rt.store.db.select().from(h.rt.store.tables.experiments)).filter((x) => !ids.has(x.id));
    assert.equal(row?.state, "failed");
    assert.equal(row?.error, "interrupted: its console stopped");
    await assert.rejects(r.start(GORGO, "admin"), /the console is stopping/);
  });

  test("a saved run stays listed however many runs came after it", async () => {
    const { store } = h.rt;
    const row = (id: string, createdAt: number) => ({
      id,
      traceId: "bundled",
      paramsJson: JSON.stringify(GORGO),
      state: "done" as const,
      progress: 1,
      createdBy: "admin",
      createdAt,
      resultJson: '{"policies":[]}',
    });
    await store.db.insert(store.tables.experiments).values(row("exp-baseline", 1_000));
    await saveExperiment(h.rt, OPERATOR, { id: "exp-baseline", name: "baseline" });
    await store.db.insert(store.tables.experiments).values(Array.from({ length: 105 }, (_, i) => row(`exp-newer-${i}`, 2_000 + i)));
    const listed = await listExperiments(h.rt);
    assert.equal(listed[0]?.name, "baseline", "saved runs come first");
    assert.ok(listed.some((x) => x.id === "exp-newer-104"));
    assert.ok(!listed.some((x) => x.id === "exp-newer-0"), "the oldest unsaved runs are not listed");
  });

  test("a failed run says why: the signal that killed the simulator, or its error line, never a progress line or a stack frame", async () => {
    const failureOf = async (code: string) => {
      const id = await runner("console-failures", script(code)).start(GORGO, "admin");
      return (await waitFor(async () => ((await rowOf(id))?.state === "failed" ? rowOf(id) : null)))?.error;
    };
    assert.equal(
      await failureOf(`process.stderr.write("progress 37/145 rtt=0.500,queue=0.100\\n", () => process.kill(process.pid, "SIGKILL"))`),
      "the simulator was killed (SIGKILL)",
    );
    assert.equal(
      await failureOf(
        `process.stderr.write("progress 3/145 x\\nmeridian-sim: unexpected error: RangeError: Maximum call stack size exceeded\\n    at simulateFleetOverSeeds (/x/simulator.ts:79:12)\\n    at file:///x/main.ts:81:25\\n", () => process.exit(1))`,
      ),
      "meridian-sim: unexpected error: RangeError: Maximum call stack size exceeded",
    );
    assert.equal(
      await failureOf(`process.stderr.write("progress 1/2 x\\nFATAL ERROR: out of memory\\n    at f (x:1:1)\\n", () => process.exit(134))`),
      "the simulator exited with code 134: FATAL ERROR: out of memory",
    );
  });
});

test("the simulator dies with a console that is killed outright (SIGKILL, the OOM killer)", { timeout: 60_000 }, async (t) => {
  const { commandLine } = await import("../../lib/tied-to-parent");
  if (commandLine({ command: process.execPath, args: [] }).args.length === 0) return t.skip("no setpriv here: the kernel cannot be asked");
  // A console in its own process: it starts a run whose simulator blocks until killed, and prints
  // the simulator's pid and its harness folder (left behind by the SIGKILL: removed here).
  const file = join(tmpdir(), `meridian-orphan-console-${process.pid}.mts`);
  const harness = join(import.meta.dirname, "..", "testing", "harness.ts");
  writeFileSync(
    file,
    `import { createHarness } from ${JSON.stringify(harness)};
     const h = await createHarness({ simCommand: () => ({ command: process.execPath, args: ["-e", ${JSON.stringify(BLOCKING_SIM)}], cwd: process.cwd() }) });
     await h.rt.experiments.start(${JSON.stringify(GORGO)}, "admin");
     const running = h.rt.experiments["running"];
     process.stdout.write(\`\${[...running.values()][0].child.pid} \${h.dir}\\n\`);
     setInterval(() => {}, 1000);`,
  );
  let simPid = 0;
  let harnessDir = "";
  try {
    const consoleProc = spawn(process.execPath, ["--conditions=react-server", "--import", "tsx", file], {
      env: { ...process.env, NODE_ENV: "test", MERIDIAN_TEST_STORE: "sqlite" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    let exited = false;
    consoleProc.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    consoleProc.once("exit", () => (exited = true));
    await waitFor(() => out.includes("\n") || exited, 45_000, "the console to start its run");
    assert.ok(!exited, "the console process ended before it started its run");
    [simPid, harnessDir] = out
      .trim()
      .split(" ")
      .map((x, i) => (i === 0 ? Number(x) : x)) as [number, string];
    assert.ok(simPid > 0 && alive(simPid), "the simulator runs");
    consoleProc.kill("SIGKILL");
    await waitFor(() => !alive(simPid), 15_000, `meridian-sim (pid ${simPid}) to end with its console`);
  } finally {
    if (simPid > 0 && alive(simPid)) process.kill(simPid, "SIGKILL");
    rmSync(file, { force: true });
    if (harnessDir) rmSync(harnessDir, { recursive: true, force: true });
  }
});
