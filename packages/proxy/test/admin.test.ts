// Admin API and front-door errors: config pushes (weights in use, telemetry config version, stale
// → 409, persisted and reloaded on restart, a config the LB cannot run refused and not persisted),
// resumable telemetry delivering each event exactly once, bad input answered with OpenAI errors
// while the LB keeps serving, and /metrics.
import { strict as assert } from "node:assert";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { request } from "undici";
import { parseLbState, parsePeerReport, parseTelemetryNdjsonLine, type LbConfig, type LbState, type TelemetryStreamLine } from "@meridian/protocol";
import { parsePrometheusText, type RunningProxy } from "../src/index";
import { adminGet, chatBody, lbConfig, MODEL, post, startEngine, startLb, TOKEN, waitFor, type Engine } from "./helpers";

let engine: Engine;
let lb: RunningProxy;
let stateDir: string;

before(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "meridian-proxy-test-"));
  engine = await startEngine("us-1", "us-ashburn");
  lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine], { limits: { maxBodyBytes: 20_000 } }), {
    settings: { stateFile: join(stateDir, "config.json"), telemetryBufferSize: 8 },
  });
});
after(async () => {
  await lb?.close();
  await engine?.close();
  rmSync(stateDir, { recursive: true, force: true });
});

async function put(
  path: string,
  body: unknown,
  token = TOKEN,
): Promise<{ status: number; json: { error?: { message: string; code: string }; version?: number } }> {
  const response = await request(`${lb.url}${path}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.statusCode, json: (await response.body.json()) as never };
}

/** Reads telemetry lines from ?since= until `count` event lines arrived, then disconnects. */
/** The lines of a telemetry subscription from `since` until `count` events have arrived. */
async function readTelemetry(since: number, count: number): Promise<TelemetryStreamLine[]> {
  const tail = await tailTelemetry(since);
  try {
    await tail.until(`${count} telemetry events`, (lines) => lines.filter((l) => l.type === "event").length >= count);
    return [...tail.lines];
  } finally {
    tail.close();
  }
}

const chat = (text: string) => post(`${lb.url}/v1/chat/completions`, chatBody(text));

test("bad input gets OpenAI errors and the LB keeps serving", async () => {
  const cases: { send: () => Promise<{ status: number; text: string }>; status: number; code: string }[] = [
    { send: () => post(`${lb.url}/v1/chat/completions`, "{not json"), status: 400, code: "invalid_json" },
    { send: () => post(`${lb.url}/v1/chat/completions`, { model: MODEL }), status: 400, code: "missing_required_parameter" },
    { send: () => post(`${lb.url}/v1/chat/completions`, chatBody("x".repeat(30_000))), status: 413, code: "request_too_large" },
    { send: () => post(`${lb.url}/v1/chat/completions`, chatBody("hi", { model: "no-such-model" })), status: 404, code: "model_not_found" },
    { send: () => post(`${lb.url}/v1/audio/speech`, { input: "x" }), status: 404, code: "not_found" },
    { send: () => post(`${lb.url}/v1/embeddings`, { model: MODEL }), status: 400, code: "missing_required_parameter" },
  ];
  for (const { send, status, code } of cases) {
    const result = await send();
    assert.equal(result.status, status, result.text);
    const body = JSON.parse(result.text) as { error: { message: string; type: string; code: string } };
    assert.equal(body.error.code, code);
    assert.equal(typeof body.error.message, "string");
    assert.equal(typeof body.error.type, "string");
  }
  // Same shape as OpenAI's own answer to an unknown model (recorded, test/fixtures/SOURCES.md).
  const recorded = JSON.parse(readFileSync(new URL("./fixtures/error-openai-model-not-found.json", import.meta.url), "utf8")) as {
    error: Record<string, unknown>;
  };
  const ours = JSON.parse((await post(`${lb.url}/v1/chat/completions`, chatBody("hi", { model: "gpt-4.1-nano-wrong" }))).text) as {
    error: Record<string, unknown>;
  };
  assert.deepEqual(Object.keys(ours.error).sort(), Object.keys(recorded.error).sort());
  assert.equal(ours.error["code"], recorded.error["code"]);
  assert.equal(ours.error["type"], recorded.error["type"]);
  const unauthorised = await request(`${lb.url}/admin/state`, { headers: { authorization: "Bearer wrong" } });
  assert.equal(unauthorised.statusCode, 401);
  await unauthorised.body.dump();
  assert.equal((await chat("still here")).status, 200);
  const health = await request(`${lb.url}/health`);
  assert.equal(health.statusCode, 200);
  await health.body.dump();
});

test("a config push changes the weights in use; telemetry carries the new version; stale → 409; persisted", async () => {
  const current = await adminGet<LbConfig>(lb, "/admin/config");
  const next = { ...current, version: current.version + 1, weights: { rtt: 1.5, queue: 0.3 } };
  assert.equal((await put("/admin/config", next)).status, 200);
  // What the LB serves is what the wire contract says.
  const state = parseLbState(await adminGet<unknown>(lb, "/admin/state"));
  parsePeerReport(await adminGet<unknown>(lb, "/admin/peer?snapshot=10"));
  assert.deepEqual(state.weights, { rtt: 1.5, queue: 0.3 });
  assert.equal(state.configVersion, next.version);
  assert.equal((await chat("under the new weights")).status, 200);
  const lines = await readTelemetry((await adminGet<LbState>(lb, "/admin/state")).telemetry.lastSeq - 1, 1);
  const event = lines.find((l) => l.type === "event");
  assert.ok(event && event.type === "event");
  assert.equal(event.event.configVersion, next.version);
  assert.deepEqual(event.event.weights, { rtt: 1.5, queue: 0.3 });

  const stale = await put("/admin/config", { ...current, weights: { rtt: 0.1, queue: 0.1 } });
  assert.equal(stale.status, 409);
  assert.equal(stale.json.error?.code, "stale_version");
  assert.equal((await put("/admin/config", next)).status, 200, "an identical re-push is idempotent");
  const invalid = await put("/admin/config", { ...next, version: next.version + 1, weights: { rtt: -1, queue: 0.1 } });
  assert.equal(invalid.status, 400);
  assert.match(invalid.json.error?.message ?? "", /weights\.rtt/);
  assert.equal((await put("/admin/config", next, "wrong-token")).status, 401);

  // A restarted LB, started from its original file config, comes back with the pushed one.
  const restarted = await startLb(lbConfig("lb-us", "us-ashburn", [engine]), { settings: { stateFile: join(stateDir, "config.json") } });
  try {
    const restartedState = await adminGet<LbState>(restarted, "/admin/state");
    assert.equal(restartedState.configVersion, next.version);
    assert.deepEqual(restartedState.weights, { rtt: 1.5, queue: 0.3 });
  } finally {
    await restarted.close();
  }
});

test("a config the LB cannot run is refused with 400 naming the field; the LB keeps serving the old one and saves nothing", async () => {
  const stateFile = join(stateDir, "config.json");
  const savedBefore = existsSync(stateFile) ? readFileSync(stateFile, "utf8") : null;
  const current = await adminGet<LbConfig>(lb, "/admin/config");
  const cases = [
    {
      config: { ...current, version: current.version + 1, index: { ...current.index, capacityBlocks: 2 ** 31 } },
      field: /lbConfig\.index\.capacityBlocks: must be at most 2147483647/,
    },
    { config: { ...current, version: current.version + 1, weights: { rtt: 1e307, queue: 0.1 } }, field: /lbConfig\.weights\.rtt: must be at most 1000000/ },
  ];
  for (const { config, field } of cases) {
    const refused = await put("/admin/config", config);
    assert.equal(refused.status, 400);
    assert.equal(refused.json.error?.code, "invalid_config");
    assert.match(refused.json.error?.message ?? "", field);
  }
  assert.deepEqual(await adminGet<LbConfig>(lb, "/admin/config"), current, "the config in use is unchanged");
  assert.equal((await adminGet<LbState>(lb, "/admin/state")).configVersion, current.version);
  assert.equal(existsSync(stateFile) ? readFileSync(stateFile, "utf8") : null, savedBefore, "nothing was persisted");
  assert.equal((await chat("still serving")).status, 200);
});

test("a telemetry stream that disconnects and resumes delivers every event exactly once", async () => {
  const start = (await adminGet<LbState>(lb, "/admin/state")).telemetry.lastSeq;
  for (let i = 0; i < 3; i++) assert.equal((await chat(`batch one ${i}`)).status, 200);
  const first = await readTelemetry(start, 2);
  const firstSeqs = first.flatMap((l) => (l.type === "event" ? [l.event.seq] : []));
  assert.deepEqual(firstSeqs.slice(0, 2), [start + 1, start + 2]);
  const lastSeen = firstSeqs.at(-1) as number;
  for (let i = 0; i < 3; i++) assert.equal((await chat(`batch two ${i}`)).status, 200);
  const total = start + 6;
  const second = await readTelemetry(lastSeen, total - lastSeen);
  const secondSeqs = second.flatMap((l) => (l.type === "event" ? [l.event.seq] : []));
  const all = [...firstSeqs, ...secondSeqs];
  assert.deepEqual(
    all,
    Array.from({ length: 6 }, (_, i) => start + 1 + i),
  );

  // The ring holds 8 events: resuming from 0 once more happened says which were dropped, then
  // continues gap-free.
  while ((await adminGet<LbState>(lb, "/admin/state")).telemetry.lastSeq <= 9) assert.equal((await chat("filler")).status, 200);
  const fromZero = await readTelemetry(0, 1);
  // A subscription opens with where the log stands and whose sequence it is.
  const opening = fromZero[0];
  assert.ok(opening?.type === "heartbeat" && opening.boot === lb.balancer.telemetry.boot);
  const dropped = fromZero[1];
  assert.ok(dropped?.type === "dropped");
  assert.equal(dropped.fromSeq, 1);
  const next = fromZero[2];
  assert.ok(next?.type === "event" && next.event.seq === dropped.toSeq + 1);
});

/** A live telemetry subscription whose lines the test can wait on as they arrive. */
async function tailTelemetry(
  since: number,
): Promise<{ lines: TelemetryStreamLine[]; until(what: string, check: (lines: TelemetryStreamLine[]) => boolean): Promise<void>; close(): void }> {
  const controller = new AbortController();
  const response = await request(`${lb.url}/admin/telemetry?since=${since}`, { headers: { authorization: `Bearer ${TOKEN}` }, signal: controller.signal });
  assert.equal(response.headers["content-type"], "application/x-ndjson");
  const lines: TelemetryStreamLine[] = [];
  let buffer = "";
  void (async () => {
    for await (const chunk of response.body) {
      buffer += (chunk as Buffer).toString();
      let at: number;
      while ((at = buffer.indexOf("\n")) >= 0) {
        lines.push(parseTelemetryNdjsonLine(buffer.slice(0, at)));
        buffer = buffer.slice(at + 1);
      }
    }
  })().catch(() => undefined);
  return {
    lines,
    until: (what, check) => waitFor(what, () => check(lines)).then(() => undefined),
    close: () => controller.abort(),
  };
}

test("live tail and heartbeats", async () => {
  const lastSeq = (await adminGet<LbState>(lb, "/admin/state")).telemetry.lastSeq;
  const tail = await tailTelemetry(lastSeq);
  try {
    // An idle stream says where the log stands: a heartbeat at the current seq, before any event.
    await tail.until("a heartbeat", (lines) => lines.some((l) => l.type === "heartbeat" && l.seq === lastSeq));
    assert.equal((await chat("tail me")).status, 200);
    await tail.until("the next event", (lines) => lines.some((l) => l.type === "event"));
    const event = tail.lines.find((l) => l.type === "event");
    assert.ok(event?.type === "event" && event.event.seq === lastSeq + 1);
  } finally {
    tail.close();
  }
});

test("a subscriber ahead of the log (the LB restarted) hears where the log stands before any event", async () => {
  const lastSeq = (await adminGet<LbState>(lb, "/admin/state")).telemetry.lastSeq;
  const tail = await tailTelemetry(lastSeq + 1_000);
  try {
    assert.equal((await chat("after a restart")).status, 200);
    await tail.until("the next event", (lines) => lines.some((l) => l.type === "event"));
    assert.deepEqual(
      { type: tail.lines[0]?.type, seq: tail.lines[0]?.type === "heartbeat" ? tail.lines[0].seq : null },
      { type: "heartbeat", seq: lastSeq },
      "the first line restarts the subscriber's sequence",
    );
  } finally {
    tail.close();
  }
});

test("GET /metrics exposes the LB's series in valid Prometheus text", async () => {
  const response = await request(`${lb.url}/metrics`);
  const text = await response.body.text();
  assert.equal(response.statusCode, 200);
  const parsed = parsePrometheusText(text);
  assert.equal(parsed.skippedLines, 0);
  const names = new Set(parsed.samples.map((s) => s.name));
  for (const name of [
    "meridian_lb_requests_total",
    "meridian_lb_ttft_seconds_bucket",
    "meridian_lb_e2e_seconds_count",
    "meridian_lb_in_flight_requests",
    "meridian_lb_queue_length",
    "meridian_lb_index_routes",
    "meridian_lb_prediction_accuracy_ratio",
    "meridian_lb_probe_rtt_seconds",
  ]) {
    assert.ok(names.has(name), `missing ${name}`);
  }
  for (const [family, meta] of parsed.families) {
    if (meta.type === "counter") assert.ok(family.endsWith("_total"), `${family} is a counter without _total`);
  }
  const ok = parsed.samples.find((s) => s.name === "meridian_lb_requests_total" && s.labels["status"] === "200");
  assert.ok((ok?.value ?? 0) > 0);
});
