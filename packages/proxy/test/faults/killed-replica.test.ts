// Issue 13, items 1 and 3, under SIGKILL of a real meridian-engine process:
//   - no request is lost before its first byte: those waiting on the killed engine are retried on
//     the other one;
//   - a stream the killed engine had already started cannot move (its head went out), and it ends
//     with an SSE event carrying an OpenAI-shaped error before the close, never silently;
//   - the openai SDK raises that error, with the LB's message.
import { strict as assert } from "node:assert";
import { after, test } from "node:test";
import { pino } from "pino";
import { startProxy, type RunningProxy } from "../../src/index";
import { chatBody, type EngineProcess, faultsConfig, metricValue, sdkStreamError, spawnEngine, streamChat, TOKEN, waitFor } from "./harness";

// Two running at a time, 40 tokens of ~25 ms: a request on it either streams for a second or waits.
const DOOMED = { maxRunning: 2, itlBaseMs: 25, maxOutputTokens: 40 };
const SURVIVOR = { maxRunning: 64, itlBaseMs: 10, maxOutputTokens: 40 };

const running: { close(): Promise<void> }[] = [];
after(async () => {
  for (const item of running.reverse()) await item.close();
});

async function lbFor(lbId: string, engines: readonly EngineProcess[]): Promise<RunningProxy> {
  // Scrapes far apart: the LB keeps sending to the doomed engine, so requests queue inside it.
  const lb = await startProxy({
    config: faultsConfig(lbId, engines, { policy: "round-robin", probes: { rttIntervalMs: 500, scrapeIntervalMs: 30_000, unhealthyAfter: 3 } }),
    token: TOKEN,
    logger: pino({ level: "silent" }),
    seed: 7,
    settings: { port: 0, host: "127.0.0.1" },
  });
  running.push(lb);
  await waitFor("replicas healthy", () => [...lb.balancer.core.replicas.values()].every((r) => r.healthy), 15_000);
  return lb;
}

test("SIGKILL: nothing lost before its first byte, and started streams end with an SSE error event", async (t) => {
  const doomed = await spawnEngine("e-doomed", DOOMED);
  const survivor = await spawnEngine("e-survivor", SURVIVOR);
  running.push({ close: () => survivor.stop() }, { close: () => doomed.stop() });
  const lb = await lbFor("lb-kill", [doomed, survivor]);
  const record = lb.balancer.core.replicas.get(doomed.id);
  let doomedFirstBytes = 0;
  const pending = Array.from({ length: 24 }, (_, i) =>
    streamChat(lb.url, chatBody(`request ${i}`, { user: `kill-${i}`, max_tokens: 40 }), (replica) => {
      if (replica === doomed.id) doomedFirstBytes++;
    }),
  );
  // Kill it once it streams to a client and holds others in its queue. The stream must be the doomed
  // engine's own: on a fast machine the survivor's first bytes come before any of the doomed one's,
  // and a kill then finds no started stream to cut.
  await waitFor("the doomed engine streaming and queueing", () => doomedFirstBytes >= 1 && (record?.inFlight ?? 0) >= 5, 15_000);
  doomed.signal("SIGKILL");
  const outcomes = await Promise.all(pending);
  let cut = 0;
  for (const outcome of outcomes) {
    assert.equal(outcome.status, 200, outcome.text);
    if (outcome.complete) continue;
    // Not complete: it can only be a stream the killed engine had started, ended with an error event.
    cut++;
    assert.equal(outcome.replica, doomed.id, "a request was lost before its first byte");
    assert.equal(outcome.transportError, null, "the stream was cut without an error event");
    assert.equal(outcome.errorEvent?.code, "upstream_error");
    assert.equal(outcome.errorEvent?.type, "server_error");
    assert.match(outcome.errorEvent?.message ?? "", /failed mid-stream/);
  }
  assert.ok(cut >= 1, "no stream was running on the killed engine");
  const retried = await metricValue(lb.url, `meridian_lb_upstream_retries_total{replica="${doomed.id}"}`);
  assert.ok(retried >= 1, "no request waiting on the killed engine was retried");
  assert.equal(await metricValue(lb.url, `meridian_lb_cut_streams_total{reason="upstream_failed"}`), cut);
  t.diagnostic(
    `SIGKILL: ${outcomes.length} requests, ${outcomes.length - cut} complete (${retried} retried off the killed engine), ${cut} started streams ended with an SSE error event, 0 lost`,
  );
});

test("the openai SDK raises the error event of a stream cut mid-way", async () => {
  const doomed = await spawnEngine("e-sdk", DOOMED);
  running.push({ close: () => doomed.stop() });
  const lb = await lbFor("lb-sdk", [doomed]);
  const error = await sdkStreamError(lb.url, 40, () => doomed.signal("SIGKILL"));
  assert.match(error.message, /failed mid-stream/);
});
