// A console deposed and elected again while its duties are still starting runs one set of duties:
// the start begun first stops at its next step. Both used to run to the end, and the first one's
// reconcile timer, overwritten by the second's, kept running after the console stepped down.
import { strict as assert } from "node:assert";
import { Writable } from "node:stream";
import { after, test } from "node:test";
import { pino } from "pino";
import { createHarness, type Harness } from "../testing/harness";

let h: Harness;
after(async () => {
  await h?.close();
});

test("elected, deposed while starting, elected again: the duties start once", async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  h = await createHarness({}, pino({ level: "info" }, sink));
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
  assert.equal(lines.filter((line) => line.includes("console duties started")).length, 1, "one set of duties");
  rt.stopDuties();
  assert.equal(rt.reconcileTimer, null, "stepping down leaves no reconcile timer");
});
