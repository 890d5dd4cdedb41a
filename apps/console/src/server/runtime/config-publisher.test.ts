// Issue 15 item 10: config pushes to an LB that is still starting are retried quietly (debug), and
// only an LB that had answered and then stopped answering is worth a warning.
import { strict as assert } from "node:assert";
import { Writable } from "node:stream";
import { after, describe, test } from "node:test";
import pino from "pino";
import { freePort } from "../testing/free-port";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { createLb, setPolicy } from "../services/lbs";
import { createRegion } from "../services/regions";

interface LogLine {
  level: number;
  msg: string;
  lbId?: string;
}

describe("config pushes while an LB starts", () => {
  let h: Harness;
  let lb: FakeLb | null = null;
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line.trim()) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  after(async () => {
    await h.close();
    await lb?.close();
  });

  test("retries at debug until the LB first answers, warns once an LB that answered goes away", async () => {
    const port = await freePort();
    h = await createHarness({}, pino({ level: "debug" }, sink));
    await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
    await createLb(h.rt, OPERATOR, { name: "lb-us", url: `http://127.0.0.1:${port}`, region: "us-ashburn" }, "lb-us");
    await h.rt.publisher.start();
    await waitFor(() => lines.some((l) => l.lbId === "lb-us" && /not answering yet/.test(l.msg)), 5_000, "a retried push");
    assert.deepEqual(
      lines.filter((l) => l.level >= 40).map((l) => l.msg),
      [],
      "nothing at warn or above while the LB starts",
    );
    assert.equal(lines.find((l) => /not answering yet/.test(l.msg))?.level, 20, "debug");

    lb = await startFakeLb({ id: "lb-us", region: "us-ashburn", token: TEST_TOKEN, port });
    h.rt.publisher.kick("lb-us");
    await waitFor(() => lb!.version > 0, 5_000, "the push to be acknowledged");
    assert.deepEqual(
      lines.filter((l) => l.level >= 40).map((l) => l.msg),
      [],
    );

    await lb.close();
    lb = null;
    await setPolicy(h.rt, OPERATOR, { id: "lb-us", policy: "least-load", crossRegion: "direct" });
    await waitFor(() => lines.some((l) => l.level === 40 && l.msg === "config push failed; retrying"), 5_000, "a warning");
  });
});
