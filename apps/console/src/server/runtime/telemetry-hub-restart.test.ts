// The telemetry hub across an LB restart (its seq begins again at 1): the console counts every event of
// the new process once, however far the new sequence got before the console reconnected, and measures
// lag from when a request ended. Against the LB's real ring (TelemetryLog) behind a fake admin client,
// and against a stream from an LB older than boot ids.
import { strict as assert } from "node:assert";
import type { ServerResponse } from "node:http";
import { PassThrough, Readable } from "node:stream";
import { after, before, test } from "node:test";
import { pino } from "pino";
import { TelemetryLog } from "@meridian/proxy";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createHarness, OPERATOR, waitFor, type Harness } from "../testing/harness";
import { telemetryEvent } from "../testing/telemetry-event";
import type { LbAdminClient, TelemetryResume } from "./lb-admin-client";
import { TelemetryHub } from "./telemetry-hub";

type TelemetryResponse = Awaited<ReturnType<LbAdminClient["telemetry"]>>;

const body = (inputTokens: number) => {
  const { schema: _schema, seq: _seq, ...rest } = telemetryEvent({ seq: 1, time: Date.now(), lbId: "lb-us", region: "us", inputTokens });
  return rest;
};

let h: Harness;
const hubs: TelemetryHub[] = [];
before(async () => {
  h = await createHarness();
  await createRegion(h.rt, OPERATOR, { name: "us" });
  await createLb(h.rt, OPERATOR, { name: "lb-us", url: "http://127.0.0.1:9", region: "us" }, "lb-us");
});
after(async () => {
  for (const hub of hubs) hub.stop();
  await h.close();
});

function startHub(lbClient: Pick<LbAdminClient, "telemetry">): TelemetryHub {
  const hub = new TelemetryHub({ store: h.rt.store, log: pino({ level: "silent" }), lbClient });
  hubs.push(hub);
  return hub;
}

/** An admin client serving whatever ring `lb.current` is (the LB process of the moment). */
function clientOver(lb: { current: TelemetryLog }, asked: TelemetryResume[]): Pick<LbAdminClient, "telemetry"> {
  return {
    telemetry: async (_lb, resume, signal) => {
      asked.push(resume);
      const stream = new PassThrough();
      const sub = lb.current.subscribe(stream as unknown as ServerResponse, resume.since, 60_000, resume.boot ?? undefined);
      signal.addEventListener("abort", () => {
        sub.close();
        stream.destroy(new Error("aborted"));
      });
      return { statusCode: 200, body: Object.assign(stream, { dump: async () => undefined }) } as unknown as TelemetryResponse;
    },
  };
}

test("an LB that restarted and served more requests than the console had seen: every new event counts once", async () => {
  const lb = { current: new TelemetryLog(1_024) };
  for (let i = 1; i <= 20; i++) lb.current.append(body(i));
  const asked: TelemetryResume[] = [];
  const hub = startHub(clientOver(lb, asked));
  await hub.start();
  await waitFor(() => hub.status()[0]?.events === 20, 5_000, "the first 20 events");
  const first = lb.current;
  // The LB restarts; by the time the console reconnects the new process has finished 30 requests.
  lb.current = new TelemetryLog(1_024);
  for (let i = 1; i <= 30; i++) lb.current.append(body(100 + i));
  first.close();
  await waitFor(() => hub.status()[0]?.events === 50, 5_000, "the new process's 30 events");
  assert.deepEqual(asked[1], { since: 20, boot: first.boot });
  // It goes on in the new sequence, and counts nothing twice.
  lb.current.append(body(131));
  await waitFor(() => hub.status()[0]?.lastSeq === 31, 5_000, "the next event");
  const status = hub.status()[0]!;
  hub.stop();
  assert.equal(status.events, 51);
  assert.equal(status.duplicates, 0);
  assert.equal(status.dropped, 0);
});

test("an LB older than boot ids: the restart heartbeat and an event in one read, and the hub still replays the new sequence from its start", async () => {
  const asked: number[] = [];
  const line = (value: unknown) => `${JSON.stringify(value)}\n`;
  const event = (seq: number) => ({ type: "event", event: telemetryEvent({ seq, time: Date.now(), lbId: "lb-us", region: "us" }) });
  const streams: string[][] = [
    // The first process: 100 events, then the stream ends (the LB goes down).
    [Array.from({ length: 100 }, (_, i) => line(event(i + 1))).join("")],
    // The restarted process holds 5; its heartbeat (no boot id) and the 6th event share one read.
    [line({ type: "heartbeat", seq: 5, time: Date.now() }) + line(event(6))],
  ];
  const hub = startHub({
    telemetry: async (_lb, resume) => {
      asked.push(resume.since);
      const chunks = streams.shift() ?? [
        // From the start of the new sequence; then the stream stays open.
        Array.from({ length: 6 }, (_, i) => line(event(i + 1))).join(""),
      ];
      const stream = new PassThrough();
      for (const chunk of chunks) stream.write(chunk);
      if (asked.length === 1) stream.end();
      return { statusCode: 200, body: Object.assign(stream, { dump: async () => undefined }) } as unknown as TelemetryResponse;
    },
  });
  await hub.start();
  await waitFor(() => hub.status()[0]?.events === 106, 10_000, "100 events, then the new sequence's 6");
  hub.stop();
  assert.deepEqual(asked, [0, 100, 0]);
});

test("an LB upgraded from one without boot ids: the new process's events count from its first", async () => {
  const asked: TelemetryResume[] = [];
  const upgraded = new TelemetryLog(1_024);
  const line = (value: unknown) => `${JSON.stringify(value)}\n`;
  const hub = startHub({
    telemetry: async (_lb, resume, signal) => {
      asked.push(resume);
      const stream = new PassThrough();
      if (asked.length === 1) {
        // The older LB: 20 events and heartbeats without a boot id, then it goes down for the upgrade.
        for (let seq = 1; seq <= 20; seq++)
          stream.write(line({ type: "event", event: telemetryEvent({ seq, time: Date.now(), lbId: "lb-us", region: "us" }) }));
        stream.end(line({ type: "heartbeat", seq: 20, time: Date.now() }));
      } else {
        // The upgraded process has finished 30 requests by the time the console is back.
        if (upgraded.latestSeq === 0) for (let i = 1; i <= 30; i++) upgraded.append(body(i));
        const sub = upgraded.subscribe(stream as unknown as ServerResponse, resume.since, 60_000, resume.boot ?? undefined);
        signal.addEventListener("abort", () => {
          sub.close();
          stream.destroy(new Error("aborted"));
        });
      }
      return { statusCode: 200, body: Object.assign(stream, { dump: async () => undefined }) } as unknown as TelemetryResponse;
    },
  });
  await hub.start();
  await waitFor(() => hub.status()[0]?.events === 50, 5_000, "20 events of the old LB and 30 of the upgraded one");
  hub.stop();
  assert.deepEqual(asked.at(-1), { since: 0, boot: upgraded.boot });
});

test("telemetry lag counts from when the LB finished the request, not from its arrival", async () => {
  const stream = new Readable({ read() {} });
  const hub = startHub({
    telemetry: async () => ({ statusCode: 200, body: Object.assign(stream, { dump: async () => undefined }) }) as unknown as TelemetryResponse,
  });
  await hub.start();
  // A 30 s generation, delivered the moment it ended.
  stream.push(
    `${JSON.stringify({ type: "event", event: telemetryEvent({ seq: 1, time: Date.now() - 30_000, e2eMs: 30_000, lbId: "lb-us", region: "us" }) })}\n`,
  );
  const status = await waitFor(() => hub.status().find((s) => s.events === 1), 5_000, "the event");
  hub.stop();
  assert.ok(status.lastEventLagMs !== null && status.lastEventLagMs < 5_000, `lag ${status.lastEventLagMs} ms`);
});
