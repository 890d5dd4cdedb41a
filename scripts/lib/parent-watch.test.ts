// A supervisor whose parent is killed outright stops itself (scripts/lib/parent-watch.mjs): a middle
// process (standing in for npm and its shell) starts a child that watches its parent; the middle is
// killed with SIGKILL, and the child, reparented, notices and exits on its own.
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { runUnderNpm, whenParentGone } from "./parent-watch.mjs";

const watch = fileURLToPath(new URL("./parent-watch.mjs", import.meta.url));

/** Installs a watch with `options` and resolves with how many times it reported the parent gone, once
 * it first has. The watch's timer does not hold the event loop; this wait must. */
async function reportsUntilGone(options: Parameters<typeof whenParentGone>[1]): Promise<number> {
  let reported = 0;
  const hold = setInterval(() => {}, 60_000);
  await new Promise<void>((resolve) => {
    whenParentGone(() => {
      reported += 1;
      resolve();
    }, options);
  });
  clearInterval(hold);
  return reported;
}

test("a child whose parent is killed with SIGKILL notices and exits by itself", async () => {
  const child = `
    const { whenParentGone } = await import(${JSON.stringify(watch)});
    whenParentGone(() => { console.log("parent gone"); process.exit(0); }, { everyMs: 50 });
    setInterval(() => {}, 1e6);
    console.log("ready " + process.pid);`;
  // The middle shares its stdout pipe with the child, so the pipe ends only when both have exited.
  const middle = spawn(
    process.execPath,
    [
      "-e",
      `require("node:child_process").spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", ${JSON.stringify(child)}], { stdio: "inherit" }); setInterval(() => {}, 1e6);`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const lines: string[] = [];
  const reader = createInterface({ input: middle.stdout });
  const ended = once(reader, "close");
  let childPid = 0;
  await new Promise<void>((resolve, reject) => {
    reader.on("line", (line) => {
      lines.push(line);
      if (line.startsWith("ready ")) {
        childPid = Number(line.slice("ready ".length));
        resolve();
      }
    });
    // A child that could not start ends the pipe without "ready": fail, do not wait for ever.
    reader.once("close", () => reject(new Error(`the child never got ready: ${JSON.stringify(lines)}`)));
  });
  middle.kill("SIGKILL");
  await ended;
  assert.deepEqual(lines, [`ready ${childPid}`, "parent gone"], "the child noticed and exited (its end of the pipe closed)");
});

test("a parent that stays is never reported gone; a new parent PID is, once", async () => {
  let parent = 100;
  let looks = 0;
  const reported = await reportsUntilGone({
    everyMs: 1,
    parentPid: () => {
      looks += 1;
      if (looks === 5) parent = 1;
      return parent;
    },
  });
  assert.equal(reported, 1);
  assert.equal(looks, 5, "three looks at the same parent reported nothing; the watch stopped at the one that saw it change");
});

test("a parent that went before the watch was installed is reported at once, against the parent read first thing", { timeout: 10_000 }, async () => {
  // start.mjs reads process.ppid first thing; by the time it installs the watch, npm may be gone.
  const startedUnder = 100;
  // Looks every minute: only the look the watch takes when it is installed can report this in time.
  const reported = await reportsUntilGone({ everyMs: 60_000, expectedParent: startedUnder, parentPid: () => 1 });
  assert.equal(reported, 1);
});

test("with expectedParent, a parent that is still there is not reported", async () => {
  let looks = 0;
  let reported = 0;
  const hold = setInterval(() => {}, 60_000);
  await new Promise<void>((resolve) => {
    whenParentGone(() => (reported += 1), {
      everyMs: 1,
      expectedParent: 100,
      parentPid: () => {
        looks += 1;
        if (looks === 5) resolve();
        return 100;
      },
    });
  });
  clearInterval(hold);
  assert.equal(reported, 0);
});

test("the watch is for npm scripts: a script started by hand (nohup) is meant to outlive its shell", () => {
  assert.equal(runUnderNpm({ npm_lifecycle_event: "start" }), true);
  assert.equal(runUnderNpm({}), false);
});
