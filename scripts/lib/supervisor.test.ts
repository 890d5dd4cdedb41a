import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { isAlive } from "./pid-files";
import { commandLine } from "../../apps/console/src/lib/tied-to-parent";
import { backoffDelayMs, Supervisor, type RestartPolicy, type SupervisorEvent } from "./supervisor";

// Tiny children: node itself, so nothing but the running Node is needed.
const EXIT_AT_ONCE = ["-e", "process.exit(3)"];
const RUN_FOREVER = ["-e", "setInterval(() => {}, 1e6)"];

const FAST: RestartPolicy = { initialDelayMs: 20, maxDelayMs: 80, stableAfterMs: 60_000, giveUpAfter: 5 };

/** Polls a condition every 10 ms; fails after `timeoutMs` (a bound, not a pacing sleep). */
async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const supervisors: Supervisor[] = [];
function supervisor(policy: RestartPolicy = FAST): { sup: Supervisor; events: SupervisorEvent[] } {
  const events: SupervisorEvent[] = [];
  const sup = new Supervisor(policy, (event) => events.push(event));
  supervisors.push(sup);
  return { sup, events };
}
after(async () => {
  await Promise.all(supervisors.map((sup) => sup.stop(1_000)));
});

/** A supervisor with one long-running child per name, once all of them have started; their PIDs by name. */
async function runningForever(...names: string[]) {
  const { sup, events } = supervisor();
  for (const name of names) sup.add({ name, command: process.execPath, args: RUN_FOREVER });
  await waitFor(() => of(events, "started").length === names.length, "every child to start");
  const pids = Object.fromEntries(names.map((name) => [name, sup.status(name)!.pid!]));
  return { sup, events, pids };
}

const of = <K extends SupervisorEvent["kind"]>(events: SupervisorEvent[], kind: K, name?: string) =>
  events.filter((e): e is Extract<SupervisorEvent, { kind: K }> => e.kind === kind && (name === undefined || e.name === name));

describe("backoffDelayMs", () => {
  test("doubles from the initial delay and stays at the cap", () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 40].map((n) => backoffDelayMs({ initialDelayMs: 500, maxDelayMs: 3_000 }, n)),
      [500, 1_000, 2_000, 3_000, 3_000, 3_000],
    );
  });
});

describe("Supervisor", () => {
  test("restarts a child that keeps failing with doubling delays, then gives up on one that never stayed up", async () => {
    const { sup, events } = supervisor();
    sup.add({ name: "flaky", command: process.execPath, args: EXIT_AT_ONCE });
    await waitFor(() => of(events, "gave-up").length === 1, "the supervisor to give up");
    assert.deepEqual(
      of(events, "restart-scheduled").map((e) => e.delayMs),
      [20, 40, 80, 80],
    );
    const starts = of(events, "started");
    assert.equal(starts.length, 5, "started once and restarted four times");
    assert.equal(new Set(starts.map((e) => e.pid)).size, 5, "a new process each time");
    assert.deepEqual(
      of(events, "exited").map((e) => e.code),
      [3, 3, 3, 3, 3],
    );
    assert.deepEqual(sup.status("flaky"), { name: "flaky", pid: starts.at(-1)!.pid, running: false, restarts: 4, gaveUp: true });
  });

  test("a child that had stayed up is restarted for as long as it keeps failing, each time from the first delay", async () => {
    const { sup, events } = supervisor({ ...FAST, stableAfterMs: 0 });
    sup.add({ name: "console", command: process.execPath, args: EXIT_AT_ONCE });
    await waitFor(() => of(events, "started").length >= 7, "six restarts");
    await sup.stop(1_000);
    assert.equal(of(events, "gave-up").length, 0);
    assert.ok(of(events, "restart-scheduled").every((e) => e.delayMs === 20 && e.failures === 1));
  });

  test("uptime does not follow the wall clock: stepped forward, a child that exits at once is still a quick exit; stepped back, a stable one is stable", async () => {
    const realNow = Date.now;
    try {
      for (const step of [3_600_000, -3_600_000]) {
        // The wall clock is stepped by `step` while each child runs (as NTP or an operator would).
        let offset = 0;
        Date.now = () => realNow() + offset;
        const policy = { ...FAST, stableAfterMs: step > 0 ? 60_000 : 0, giveUpAfter: 1 };
        const events: SupervisorEvent[] = [];
        // Waited for through the events, not waitFor: its deadline is read from the stepped clock.
        const decided = new Promise<void>((resolve) => {
          const sup = new Supervisor(policy, (event) => {
            events.push(event);
            if (event.kind === "started") offset += step;
            if (event.kind === "gave-up" || event.kind === "restart-scheduled") {
              void sup.stop(1_000);
              resolve();
            }
          });
          supervisors.push(sup);
          sup.add({ name: "child", command: process.execPath, args: EXIT_AT_ONCE });
        });
        await decided;
        const exited = of(events, "exited")[0]!;
        assert.ok(exited.uptimeMs >= 0 && exited.uptimeMs < 60_000, `uptime ${exited.uptimeMs} ms after a ${step} ms clock step`);
        if (step > 0) assert.equal(of(events, "gave-up").length, 1, "a child that exits at once, clock stepped forward, is still given up on");
        else assert.equal(of(events, "restart-scheduled").length, 1, "a child that was stable, clock stepped back, is restarted");
      }
    } finally {
      Date.now = realNow;
    }
  });

  test("killing the console child restarts it and leaves the fleet children running; stop() ends them all by PID", async () => {
    const { sup, events, pids } = await runningForever("fleet", "console");
    const fleetPid = pids.fleet!;
    const firstConsolePid = pids.console!;

    process.kill(firstConsolePid, "SIGKILL");
    await waitFor(() => of(events, "started", "console").length === 2, "the console to be restarted");
    const exited = of(events, "exited", "console")[0]!;
    assert.equal(exited.signal, "SIGKILL");
    assert.equal(of(events, "restart-scheduled", "console")[0]!.delayMs, 20);
    const console2 = sup.status("console")!;
    assert.notEqual(console2.pid, firstConsolePid);
    assert.equal(console2.running, true);
    assert.equal(console2.restarts, 1);

    const fleet = sup.status("fleet")!;
    assert.deepEqual({ pid: fleet.pid, running: fleet.running, restarts: fleet.restarts }, { pid: fleetPid, running: true, restarts: 0 });
    assert.ok(isAlive(fleetPid), "the fleet process was not touched");
    assert.equal(of(events, "exited", "fleet").length, 0);

    await sup.stop(2_000);
    assert.ok(!isAlive(fleetPid) && !isAlive(console2.pid!), "stop() ended both");
    assert.equal(of(events, "started").length, 3, "nothing restarted after stop()");
    const exits = of(events, "exited").map((e) => `${e.name}:${e.signal}`);
    assert.deepEqual(exits.slice(1).sort(), ["console:SIGTERM", "fleet:SIGTERM"]);
  });

  test("stop() of some children ends only those, and from then on none is restarted", async () => {
    const { sup, events, pids } = await runningForever("lb", "engine");
    const lbPid = pids.lb!;
    const enginePid = pids.engine!;
    await sup.stop(1_000, ["lb"]);
    assert.ok(!isAlive(lbPid), "the LB was stopped");
    assert.ok(isAlive(enginePid), "the engine still runs while the LB stops");
    assert.equal(of(events, "restart-scheduled").length, 0, "the stopped child is not restarted");
    process.kill(enginePid, "SIGKILL");
    await waitFor(() => of(events, "exited", "engine").length === 1, "the engine to exit");
    assert.equal(of(events, "restart-scheduled").length, 0, "nor is a child that exits after a stop()");
    await sup.stop(1_000);
  });

  test("stop() escalates to SIGKILL for a child that ignores SIGTERM", async (t) => {
    const { sup, events } = supervisor();
    const dir = mkdtempSync(join(tmpdir(), "meridian-supervisor-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const readyFile = join(dir, "ready");
    // The child ignores SIGTERM and writes readyFile once its handler is in place, so stop() never races it.
    const script = `process.on("SIGTERM", () => {}); setInterval(() => {}, 1e6); require("node:fs").writeFileSync(${JSON.stringify(readyFile)}, "")`;
    sup.add({ name: "stubborn", command: process.execPath, args: ["-e", script] });
    const pid = sup.status("stubborn")!.pid!;
    await waitFor(() => existsSync(readyFile), "the child to install its SIGTERM handler");
    await sup.stop(200);
    assert.equal(of(events, "exited", "stubborn")[0]?.signal, "SIGKILL");
    assert.ok(!isAlive(pid));
  });

  test("a fatal exit code of a child that never stayed up gives up at once", async () => {
    const { sup, events } = supervisor();
    sup.add({ name: "bad-config", command: process.execPath, args: ["-e", "process.exit(2)"], fatalExitCodes: [2] });
    await waitFor(() => of(events, "gave-up").length === 1, "the supervisor to give up");
    assert.equal(of(events, "started").length, 1);
    assert.equal(of(events, "restart-scheduled").length, 0);
    assert.equal(of(events, "gave-up")[0]?.fatal, true, "start.mjs says a bad setting rather than a crash loop");
  });

  test("a command that cannot be spawned is reported and given up on, without a crash", async () => {
    const { sup, events } = supervisor({ ...FAST, giveUpAfter: 2 });
    sup.add({ name: "missing", command: "/nonexistent/meridian-binary", args: [] });
    await waitFor(() => of(events, "gave-up").length === 1, "the supervisor to give up");
    assert.equal(of(events, "spawn-failed").length, 2);
    assert.match(of(events, "spawn-failed")[0]!.error, /ENOENT/);
    assert.throws(() => sup.add({ name: "missing", command: "x", args: [] }), /already supervised/);
  });
});

describe("a supervisor killed outright", () => {
  const supervisorModule = fileURLToPath(new URL("./supervisor.ts", import.meta.url));

  test("its child gets SIGTERM from the kernel and exits (Linux, through setpriv)", {
    skip: commandLine({ command: process.execPath, args: [] }).args.length === 0 && "no setpriv here",
  }, async () => {
    // The middle process is the supervisor (as start.mjs or the demo fleet is); its child reports the
    // signal on the stdout pipe that all three share, so the pipe closes only when both have exited.
    const child = `process.on("SIGTERM", () => { console.log("SIGTERM"); process.exit(0); }); setInterval(() => {}, 1e6); console.log("ready");`;
    const middleCode = `
      const { Supervisor } = await import(${JSON.stringify(supervisorModule)});
      const sup = new Supervisor(undefined, (event) => { if (event.kind === "started") console.log("started " + event.pid); });
      sup.add({ name: "child", command: process.execPath, args: ["-e", ${JSON.stringify(child)}] });
      setInterval(() => {}, 1e6);`;
    const middle = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", middleCode], { stdio: ["ignore", "pipe", "inherit"] });
    const lines: string[] = [];
    const reader = createInterface({ input: middle.stdout! });
    const ended = once(reader, "close");
    let childPid = 0;
    await new Promise<void>((resolve, reject) => {
      reader.on("line", (line) => {
        lines.push(line);
        if (line.startsWith("started ")) childPid = Number(line.slice("started ".length));
        // Its handler is in place: a SIGTERM from now on is reported.
        if (line === "ready") resolve();
      });
      reader.once("close", () => reject(new Error(`the supervisor's child never got ready: ${JSON.stringify(lines)}`)));
    });
    middle.kill("SIGKILL");
    // Bounded, so that a child that outlives its supervisor fails the test instead of hanging it.
    const exited = await Promise.race([ended.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000).unref())]);
    if (!exited) {
      process.kill(childPid, "SIGKILL");
      assert.fail(`the child (pid ${childPid}) was still running 10 s after its supervisor was killed`);
    }
    assert.deepEqual(lines, [`started ${childPid}`, "ready", "SIGTERM"], "the child got SIGTERM and exited (its end of the pipe closed)");
  });

  test("setpriv wraps only an executable that exists, and keeps its arguments", () => {
    assert.deepEqual(commandLine({ command: process.execPath, args: ["-e", "1"] }, "/usr/bin/setpriv"), {
      command: "/usr/bin/setpriv",
      args: ["--pdeathsig", "TERM", "--", process.execPath, "-e", "1"],
    });
    assert.deepEqual(commandLine({ command: "/nonexistent/meridian-binary", args: [] }, "/usr/bin/setpriv"), {
      command: "/nonexistent/meridian-binary",
      args: [],
    });
    assert.deepEqual(commandLine({ command: "node", args: ["x"] }, "/usr/bin/setpriv"), { command: "node", args: ["x"] });
    assert.deepEqual(commandLine({ command: process.execPath, args: [] }, null), { command: process.execPath, args: [] });
  });
});
