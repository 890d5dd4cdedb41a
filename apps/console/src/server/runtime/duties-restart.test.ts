// A console deposed and elected again while its duties are still starting runs one set of duties:
// the start begun first stops at its next step. Both used to run to the end, and the first one's
// reconcile timer, overwritten by the second's, kept running after the console stepped down.
import { strict as assert } from "node:assert";
import { after, test } from "node:test";
import { createHarness, type Harness } from "../testing/harness";
import { loggedLines } from "../testing/log-lines";

let h: Harness;
after(async () => {
  await h?.close();
});

test("elected, deposed while starting, elected again: the duties start once", async () => {
  const { log, lines } = loggedLines();
  h = await createHarness({}, log);
  const rt = h.rt as unknown as {
    startDuties(reconcileEveryMs: number): void;
    stopDuties(): void;
    dutiesStarting: Promise<void> | null;
    reconcileTimer: NodeJS.Timeout | null;
    tuners: { start(): Promise<void> };
  };
  let tunerStarts = 0;
  const start = rt.tuners.start.bind(rt.tuners);
  rt.tuners.start = () => {
    tunerStarts += 1;
    return start();
  };
  rt.startDuties(60_000);
  rt.stopDuties();
  rt.startDuties(60_000);
  await rt.dutiesStarting;
  assert.equal(tunerStarts, 1, "the tuners started once");
  assert.equal(lines.filter((line) => line.msg.includes("console duties started")).length, 1, "one set of duties");
  rt.stopDuties();
  assert.equal(rt.reconcileTimer, null, "stepping down leaves no reconcile timer");
});
