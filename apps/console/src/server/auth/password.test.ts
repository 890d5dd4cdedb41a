// Password checks must leave the event loop free: the console's timers (leader lease renewal, LB
// probes and their timeouts) run on it, and logins are open to anyone.
import { strict as assert } from "node:assert";
import { describe, test } from "node:test";
import { hashPassword, verifyPassword } from "./password";
import { PasswordCheckGate } from "./password-check-gate";

describe("password checks and the event loop", () => {
  test("a timer due during 20 concurrent checks fires before they have all finished", async () => {
    const stored = await hashPassword("right");
    let finished = 0;
    const checks = Array.from({ length: 20 }, (_, i) =>
      Promise.resolve(verifyPassword(i === 0 ? "right" : `wrong-${i}`, stored)).then((ok) => {
        finished += 1;
        return ok;
      }),
    );
    const finishedWhenTimerFired = await new Promise<number>((resolve) => setTimeout(() => resolve(finished), 0));
    const results = await Promise.all(checks);
    assert.ok(finishedWhenTimerFired < 20, `the timer waited for all ${finishedWhenTimerFired} checks`);
    assert.deepEqual(
      results.map((ok, i) => ok === (i === 0)),
      Array(20).fill(true),
    );
  });

  test("hashes keep the stored format; malformed or emptied hashes never verify", async () => {
    const hash = await hashPassword("s3cret!");
    assert.match(hash, /^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    assert.equal(await verifyPassword("s3cret!", hash), true);
    assert.equal(await verifyPassword("s3cret!", "disabled"), false);
    assert.equal(await verifyPassword("anything", hash.replace(/\$[^$]+$/, "$=")), false);
    assert.equal(await verifyPassword("anything", "scrypt$3$8$1$c2FsdA==$aGFzaGhhc2hoYXNoaGFzaA=="), false, "N that scrypt rejects");
  });
});

describe("the password check gate", () => {
  test("at most `running` checks at once, `waiting` more queue in order, the rest are turned away", async () => {
    const gate = new PasswordCheckGate(2, 3);
    let inFlight = 0;
    let peak = 0;
    const releases: (() => void)[] = [];
    const started: number[] = [];
    const check = (i: number) => () =>
      new Promise<number>((resolve) => {
        inFlight += 1;
        peak = Math.max(peak, inFlight);
        started.push(i);
        releases.push(() => {
          inFlight -= 1;
          resolve(i);
        });
      });
    const runs = Array.from({ length: 7 }, (_, i) => gate.run(check(i)));
    // Two running, three queued: the sixth and seventh are turned away at once.
    assert.deepEqual(await Promise.all([runs[5], runs[6]]), [null, null]);
    while (releases.length > 0) {
      releases.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.deepEqual(await Promise.all(runs.slice(0, 5)), [0, 1, 2, 3, 4]);
    assert.deepEqual(started, [0, 1, 2, 3, 4]);
    assert.equal(peak, 2);
    // All slots free again.
    assert.equal(await gate.run(async () => "again"), "again");
  });
});
