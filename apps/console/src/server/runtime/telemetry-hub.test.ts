// The telemetry hub against a stream that is not an LB's telemetry: a line that never ends is cut at
// MAX_LINE_CHARS and the subscription reconnects (it used to grow without bound, rescanning the whole
// partial line on every chunk); the events around a good newline still count.
import { strict as assert } from "node:assert";
import { Readable } from "node:stream";
import { after, before, test } from "node:test";
import { pino } from "pino";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { startFakeLb } from "../testing/fake-lb";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";
import { telemetryEvent } from "../testing/telemetry-event";
import { MAX_LINE_CHARS, TelemetryHub } from "./telemetry-hub";
import type { LbAdminClient } from "./lb-admin-client";

let h: Harness;
let hub: TelemetryHub | null = null;
before(async () => {
  h = await createHarness();
  await createRegion(h.rt, OPERATOR, { name: "us" });
  await createLb(h.rt, OPERATOR, { name: "lb-us", url: "http://127.0.0.1:9", region: "us" }, "lb-us");
});
after(async () => {
  hub?.stop();
  await h.close();
});

test("a line longer than MAX_LINE_CHARS without a newline ends the stream with a clear error, and the hub reconnects after the last event", async () => {
  const sinces: number[] = [];
  const event = JSON.stringify({ type: "event", event: telemetryEvent({ seq: 1, time: Date.now(), lbId: "lb-us", region: "us" }) });
  const endless = "x".repeat(64 * 1024);
  const lbClient: Pick<LbAdminClient, "telemetry"> = {
    telemetry: async (_lb, resume) => {
      sinces.push(resume.since);
      function* body(): Generator<Buffer> {
        yield Buffer.from(`${event}\n`);
        for (let i = 0; i * endless.length <= MAX_LINE_CHARS + endless.length; i += 1) yield Buffer.from(endless);
      }
      return { statusCode: 200, body: Object.assign(Readable.from(body()), { dump: async () => undefined }) } as unknown as Awaited<
        ReturnType<LbAdminClient["telemetry"]>
      >;
    },
  };
  hub = new TelemetryHub({ store: h.rt.store, log: pino({ level: "silent" }), lbClient });
  await hub.start();
  await waitFor(() => sinces.length >= 2, 10_000, "a reconnect");
  const [status] = hub.status();
  assert.match(status?.lastError ?? "", /without a newline/);
  assert.equal(status?.events, 1, "the event before the endless line counted, once");
  assert.deepEqual(sinces.slice(0, 2), [0, 1], "the reconnect resumes after the last event seen");
});

test("a hub stopped and started again (a console deposed and re-elected) counts each event once in the overview's stats", async () => {
  const lb = await startFakeLb({ id: "lb-a", region: "us", token: TEST_TOKEN });
  const h2 = await createHarness();
  try {
    await createRegion(h2.rt, OPERATOR, { name: "us" });
    await createLb(h2.rt, OPERATOR, { name: "lb-a", url: lb.url, region: "us" });
    await h2.rt.telemetry.start();
    for (let i = 0; i < 5; i += 1) lb.emit({ time: Date.now() });
    await waitFor(() => h2.rt.telemetry.status()[0]?.lastSeq === 5, 5_000, "5 events");
    assert.equal(h2.rt.telemetry.stats.summary().requests, 5);
    h2.rt.telemetry.stop();
    await h2.rt.telemetry.start();
    // The LB sends its buffer again from the start.
    await waitFor(() => h2.rt.telemetry.status()[0]?.lastSeq === 5, 5_000, "the buffer sent again");
    assert.equal(h2.rt.telemetry.stats.summary().requests, 5);
  } finally {
    h2.rt.telemetry.stop();
    await h2.close();
    await lb.close();
  }
});
