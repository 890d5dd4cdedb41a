// Upstream failures: a replica killed mid-run loses no request that had not started streaming (retry
// once elsewhere), a hung replica neither blocks requests bound elsewhere nor keeps its own (header
// timeout, retry), a late request leaves its replica only for one that can take it now, a 4xx never
// marks a replica unhealthy, a client disconnect releases the counters, a dead replica leaves routing
// once its probes fail and returns when it recovers, and a 503 moves a request to another replica. The
// fault suite (test/faults/) covers frozen and SIGKILLed engine processes, drains, cut streams, slow
// bodies and invalid requests.
import { strict as assert } from "node:assert";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { request } from "undici";
import type { LbConfigInput, LbState } from "@meridian/protocol";
import type { RunningProxy } from "../src/index";
import {
  adminGet,
  adminPutConfig,
  chatBody,
  completionJson,
  DEMO_ENGINE_PARAMS,
  lbConfig,
  MODEL,
  post,
  servedBy,
  sseChunk,
  startEngine,
  startHoldingEngine,
  startLb,
  waitFor,
  type Engine,
} from "./helpers";

// Two running at a time, ~1.5 s each: the rest wait in the engine, not yet streaming.
const SLOW = { ...DEMO_ENGINE_PARAMS, maxRunning: 2, itlBaseMs: 25, maxOutputTokens: 60 };
// For the kill test: ~4 s per request, so the doomed replica's queue is still full when it dies
// even on a loaded machine.
const VERY_SLOW = { ...SLOW, itlBaseMs: 20, maxOutputTokens: 200 };

test("a replica killed mid-run loses no request that had not started streaming", async () => {
  const doomed = await startEngine("us-doomed", "us-ashburn", { params: VERY_SLOW });
  const survivor = await startEngine("us-survivor", "us-ashburn", { params: { ...SLOW, maxRunning: 64 } });
  // Scrapes far apart: the LB keeps pushing to the doomed replica, so requests queue inside it.
  const lb = await startLb(
    lbConfig("lb-us", "us-ashburn", [doomed, survivor], { policy: "round-robin", probes: { rttIntervalMs: 200, scrapeIntervalMs: 30_000, unhealthyAfter: 2 } }),
  );
  try {
    // 12 streaming requests: on the doomed replica 2 run (streaming) and the rest wait in its queue.
    // The abandoned-stream test below uses the same SLOW engine.
    const started: boolean[] = [];
    const results = Array.from({ length: 12 }, async (_, i) => {
      const response = await request(`${lb.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(chatBody(`request ${i}`, { stream: true, max_tokens: 200 })),
      });
      started[i] = true;
      try {
        const text = await response.body.text();
        return { i, status: response.statusCode, complete: text.includes("data: [DONE]"), replica: response.headers["x-meridian-replica"] };
      } catch {
        return { i, status: response.statusCode, complete: false, replica: response.headers["x-meridian-replica"] };
      }
    });
    await waitFor("doomed replica streaming", async () => {
      const state = await adminGet<LbState>(lb, "/admin/state");
      const doomedState = state.replicas.find((r) => r.id === "us-doomed");
      return (doomedState?.inFlight ?? 0) >= 4 && started.some(Boolean) ? true : undefined;
    });
    await doomed.close();
    const outcomes = await Promise.all(results);
    for (const outcome of outcomes) {
      assert.equal(outcome.status, 200);
      // The LB sends headers only with the first upstream bytes, and names the replica they came
      // from: an incomplete response is one the doomed replica had already started streaming.
      if (!outcome.complete) assert.equal(outcome.replica, "us-doomed", `request ${outcome.i} lost without having started`);
    }
    // Some of them had been waiting on the doomed replica: the LB retried them.
    const metrics = await (await request(`${lb.url}/metrics`)).body.text();
    const retries = /meridian_lb_upstream_retries_total\{replica="us-doomed"\} (\d+)/.exec(metrics);
    assert.ok(Number(retries?.[1] ?? 0) >= 1, "no retry away from the killed replica");
    // Requests after the kill never reach the dead replica.
    for (let i = 0; i < 4; i++) assert.equal(servedBy(await post(`${lb.url}/v1/chat/completions`, chatBody(`after ${i}`))), "us-survivor");
    const state = await adminGet<LbState>(lb, "/admin/state");
    const dead = state.replicas.find((r) => r.id === "us-doomed");
    assert.equal(dead?.healthy, false);
    assert.equal(dead?.inFlight, 0);
    assert.equal(dead?.queuedTokens, 0);
  } finally {
    await lb.close();
    await survivor.close();
    await doomed.close();
  }
});

/** Answers /health and /metrics like an idle SGLang (so it never looks full), and completions at
 * once, or never (hung). */
async function startIdleReplica(completions: "answered" | "hung"): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    if (req.url === "/health") return void res.end("{}");
    if (req.url === "/metrics") return void res.end("sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n");
    req.resume();
    if (completions === "answered") req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(completionJson("ok")));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

test("a hung replica does not block requests bound elsewhere, and its own are retried after the header timeout", async () => {
  const hung = await startIdleReplica("hung");
  // A request leaves the hung replica at its first-byte deadline only for a replica that can take it
  // then, and a simulated engine under a loaded machine may report a waiting request (full) at that
  // moment: this one never does.
  const healthy = await startIdleReplica("answered");
  const config = lbConfig("lb-us", "us-ashburn", [{ id: "us-ok", url: healthy.url, region: "us-ashburn" }], {
    policy: "round-robin",
    limits: { headersTimeoutMs: 600 },
  });
  config.replicas = [...(config.replicas ?? []), { id: "us-hung", url: hung.url, region: "us-ashburn", model: MODEL, engine: "sglang" }];
  const lb = await startLb(config);
  try {
    await waitFor("hung replica healthy by probe", async () => {
      const state = await adminGet<LbState>(lb, "/admin/state");
      return state.replicas.every((r) => r.healthy) ? true : undefined;
    });
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => post(`${lb.url}/v1/chat/completions`, chatBody(`q ${i}`))));
    for (const result of results) {
      assert.equal(result.status, 200, result.text);
      assert.equal(servedBy(result), "us-ok");
    }
  } finally {
    await lb.close();
    for (const { server } of [healthy, hung]) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }
});

test("past its first-byte deadline a request stays on its replica while no other can take it, and gets its late answer", async () => {
  const slow = await startHoldingEngine("us-slow", "us-ashburn");
  const busy = await startHoldingEngine("us-busy", "us-ashburn");
  const config = lbConfig("lb-us", "us-ashburn", [slow, busy], { policy: "round-robin", limits: { firstByteMinMs: 200, headersTimeoutMs: 60_000 } });
  // One request at a time each: with a request on it, a replica is full.
  config.replicas = config.replicas?.map((r) => ({ ...r, maxConcurrency: 1 }));
  const lb = await startLb(config);
  const core = lb.balancer.core;
  const verdicts: { cause: string; moves: boolean }[] = [];
  const canRedispatch = core.canRedispatch.bind(core);
  core.canRedispatch = (ticket, now, cause) => {
    const moves = canRedispatch(ticket, now, cause);
    verdicts.push({ cause, moves });
    return moves;
  };
  try {
    await waitFor("both replicas healthy", () => [...core.replicas.values()].every((r) => r.healthy));
    const late = post(`${lb.url}/v1/chat/completions`, chatBody("late", { stream: true }));
    const lateHeld = await waitFor("the late request on its replica", () => slow.held[0] ?? busy.held[0]);
    const [first, other] = slow.held.length === 1 ? [slow, busy] : [busy, slow];
    const filler = post(`${lb.url}/v1/chat/completions`, chatBody("keeps the other replica full"));
    const fillerHeld = await waitFor("the other replica full", () => other.held[0]);
    // Its deadline passes: moved into the hold queue, its replica excluded, it could only wait for the
    // full one (and be refused at the wait bound) while its own replica sat idle.
    await waitFor("the first-byte deadline passed", () => verdicts.some((v) => v.cause === "deadline"));
    // Asked again at each drain after (a probe, a scrape), it stays while the other is full.
    assert.ok(verdicts.length >= 1 && verdicts.every((v) => v.cause === "deadline" && !v.moves), JSON.stringify(verdicts));
    assert.equal(lb.balancer.core.queue.length, 0);
    lateHeld.res.writeHead(200, { "content-type": "text/event-stream" });
    lateHeld.res.end(`${sseChunk("late but here")}data: [DONE]\n\n`);
    const result = await late;
    assert.equal(result.status, 200);
    assert.equal(servedBy(result), first.id);
    assert.equal(result.text, `${sseChunk("late but here")}data: [DONE]\n\n`);
    fillerHeld.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("filler"));
    assert.equal((await filler).status, 200);
    assert.equal(first.held.length + other.held.length, 2, "no request was sent twice");
  } finally {
    await lb.close();
    await slow.close();
    await busy.close();
  }
});

test("a 4xx from a replica passes through and never marks it unhealthy; a client abort releases counters", async () => {
  const engine = await startEngine("us-1", "us-ashburn", { params: SLOW });
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
  try {
    for (let i = 0; i < 5; i++) {
      const result = await post(`${lb.url}/v1/chat/completions`, chatBody("bad max_tokens", { max_tokens: "lots" }));
      assert.equal(result.status, 400);
      assert.equal(typeof JSON.parse(result.text).error.message, "string");
    }
    let state = await adminGet<LbState>(lb, "/admin/state");
    assert.equal(state.replicas[0]?.healthy, true);
    const controller = new AbortController();
    const pending = request(`${lb.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(chatBody("abandon me", { stream: true, max_tokens: 60 })),
      signal: controller.signal,
    }).then((r) => r.body.text());
    await waitFor("request in flight", async () => ((await adminGet<LbState>(lb, "/admin/state")).replicas[0]?.inFlight === 1 ? true : undefined));
    controller.abort();
    await assert.rejects(pending);
    state = await waitFor("counters released", async () => {
      const s = await adminGet<LbState>(lb, "/admin/state");
      return s.replicas[0]?.inFlight === 0 ? s : undefined;
    });
    assert.equal(state.replicas[0]?.queuedTokens, 0);
    assert.equal(state.replicas[0]?.healthy, true);
    assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody("still serving"))).status, 200);
  } finally {
    await lb.close();
    await engine.close();
  }
});

test("a replica failing its health probes is excluded and re-admitted when it recovers", async () => {
  const first = await startEngine("us-flaky", "us-ashburn");
  const steady = await startEngine("us-steady", "us-ashburn");
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [first, steady], { policy: "round-robin" }));
  let revived: Engine | null = null;
  try {
    await first.close();
    const down = await waitFor("flaky marked unhealthy, its scrape failing", async () => {
      const state = await adminGet<LbState>(lb, "/admin/state");
      const flaky = state.replicas.find((r) => r.id === "us-flaky");
      return flaky?.healthy === false && flaky.scrape.ok === false ? flaky : undefined;
    });
    // The failed scrape is visible, with its reason and the age of the last good one.
    assert.equal(typeof down.scrape.error, "string");
    assert.ok((down.scrape.ageMs ?? 0) > 0);
    for (let i = 0; i < 3; i++) assert.equal(servedBy(await post(`${lb.url}/v1/chat/completions`, chatBody(`x ${i}`))), "us-steady");
    revived = await startEngine("us-flaky", "us-ashburn", { port: first.port });
    await waitFor("flaky re-admitted", async () => {
      const state = await adminGet<LbState>(lb, "/admin/state");
      return state.replicas.every((r) => r.healthy) ? true : undefined;
    });
    const served = new Set<string | undefined>();
    for (let i = 0; i < 4; i++) served.add(servedBy(await post(`${lb.url}/v1/chat/completions`, chatBody(`y ${i}`))));
    assert.ok(served.has("us-flaky"));
  } finally {
    await lb.close();
    await steady.close();
    await revived?.close();
  }
});

/** Answers probes like an idle SGLang and every completion with a 503 (an overloaded engine); with
 * `endless`, a 503 whose body never ends; with `recoversAfter`, only that many 503s, then completions.
 * Counts the completions, the ones whose connection closed, and the connections completions came on. */
async function startBrokenReplica(options: { endless?: boolean; recoversAfter?: number } = {}): Promise<{
  url: string;
  server: Server;
  completions: () => number;
  closed: () => number;
  connections: () => number;
}> {
  let completions = 0;
  let closed = 0;
  const sockets = new Set<unknown>();
  const server = createServer((req, res) => {
    if (req.url === "/health") return void res.end("{}");
    if (req.url === "/metrics") return void res.end("sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n");
    req.resume();
    completions++;
    sockets.add(req.socket);
    res.on("close", () => closed++);
    if (options.recoversAfter !== undefined && completions > options.recoversAfter) {
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end(completionJson("recovered"));
    }
    res.writeHead(503, { "content-type": "application/json" });
    if (options.endless) return void res.write('{"error":{"message":"engine overloaded",');
    res.end('{"error":{"message":"engine overloaded","type":"server_error","code":null}}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    completions: () => completions,
    closed: () => closed,
    connections: () => sockets.size,
  };
}

type BrokenReplica = Awaited<ReturnType<typeof startBrokenReplica>>;

/**
 * A round-robin LB over a healthy engine ("us-ok") and a broken replica ("us-broken"), both probed
 * healthy, for `body`; the LB, the engine and the replica are stopped after it, whatever it threw.
 */
async function besideBrokenReplica(
  options: { broken?: Parameters<typeof startBrokenReplica>[0]; limits?: LbConfigInput["limits"] },
  body: (lb: RunningProxy, broken: BrokenReplica) => Promise<void>,
): Promise<void> {
  const broken = await startBrokenReplica(options.broken);
  const engine = await startEngine("us-ok", "us-ashburn");
  const config = lbConfig("lb-us", "us-ashburn", [engine], { policy: "round-robin", ...(options.limits ? { limits: options.limits } : {}) });
  config.replicas = [...(config.replicas ?? []), { id: "us-broken", url: broken.url, region: "us-ashburn", model: MODEL, engine: "sglang" }];
  const lb = await startLb(config);
  try {
    await waitFor("both healthy", async () => ((await adminGet<LbState>(lb, "/admin/state")).replicas.every((r) => r.healthy) ? true : undefined));
    await body(lb, broken);
  } finally {
    await lb.close();
    await engine.close();
    broken.server.closeAllConnections();
    await new Promise((resolve) => broken.server.close(resolve));
  }
}

test("a retried 503 with a small body is read to its end: the engine's next request reuses its connection", async () => {
  // One connection to the replica: its next request waits for it, rather than racing the drain.
  await besideBrokenReplica({ broken: { recoversAfter: 1 }, limits: { maxConnectionsPerReplica: 1 } }, async (lb, broken) => {
    for (let i = 0; i < 6 && broken.completions() < 2; i++) assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody(`r ${i}`))).status, 200);
    assert.equal(broken.completions(), 2);
    // Closed, an overloaded engine answering 503s would get a new TCP (and TLS) connection per retry.
    assert.equal(broken.connections(), 1);
  });
});

test("a 503 the LB retried elsewhere whose body never ends is not waited for: its connection is closed", async () => {
  await besideBrokenReplica({ broken: { endless: true } }, async (lb, broken) => {
    for (let i = 0; i < 4; i++) assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody(`r ${i}`))).status, 200);
    assert.ok(broken.completions() >= 1);
    // Read on to its end, each would hold a connection to the replica for limits.bodyTimeoutMs
    // (300 s) while the LB counts its slot free; it is cut after MAX_DRAIN_MS (unused-body.ts).
    await waitFor("every retried 503's connection closed", () => (broken.closed() === broken.completions() ? true : undefined));
  });
});

// A 500 is the engine's answer to the body and is never retried: test/faults/invalid-requests.test.ts.
test("a 503 before any byte is retried once on another replica; with none left the client gets 502 at once", async () => {
  await besideBrokenReplica({}, async (lb, broken) => {
    for (let i = 0; i < 4; i++) {
      const result = await post(`${lb.url}/v1/chat/completions`, chatBody(`r ${i}`));
      assert.equal(result.status, 200);
      assert.equal(servedBy(result), "us-ok");
    }
    assert.ok(broken.completions() >= 1);
    const onlyBroken = await startLb(
      lbConfig("lb-solo", "us-ashburn", [], { replicas: [{ id: "us-broken", url: broken.url, region: "us-ashburn", model: MODEL, engine: "sglang" }] }),
    );
    try {
      await waitFor("solo healthy", async () => ((await adminGet<LbState>(onlyBroken, "/admin/state")).replicas[0]?.healthy ? true : undefined));
      const failed = await post(`${onlyBroken.url}/v1/chat/completions`, chatBody("nowhere to go"));
      assert.equal(failed.status, 502);
      assert.equal(JSON.parse(failed.text).error.code, "upstream_error");
      // A 503 is the replica's answer, not a dead replica: it stays in rotation.
      assert.equal((await adminGet<LbState>(onlyBroken, "/admin/state")).replicas[0]?.healthy, true);
    } finally {
      await onlyBroken.close();
    }
  });
});

test("a replica re-pointed to a new URL: a reset on the old URL keeps the new engine in rotation and moves the request there", async () => {
  const oldEngine = await startHoldingEngine("us-1", "us-ashburn");
  const newEngine = await startHoldingEngine("us-1", "us-ashburn");
  // Probes far apart: a wrong "unreachable" would stay visible.
  const v1 = lbConfig("lb-us", "us-ashburn", [oldEngine], { probes: { rttIntervalMs: 60_000, scrapeIntervalMs: 60_000, unhealthyAfter: 2 } });
  const lb = await startLb(v1);
  try {
    const pending = post(`${lb.url}/v1/chat/completions`, chatBody("on the old url"));
    await waitFor("the request at the old engine", () => oldEngine.held.length === 1);
    await adminPutConfig(lb, { ...v1, version: 2, replicas: [{ ...v1.replicas![0]!, url: newEngine.url }] });
    await waitFor("the new URL healthy", async () => ((await adminGet<LbState>(lb, "/admin/state")).replicas[0]?.healthy ? true : undefined));
    // The old engine goes away (why it was re-pointed): the connection resets before any byte.
    await oldEngine.close();
    (await waitFor("the request retried on the new engine", () => newEngine.held[0])).res.end(completionJson("ok"));
    assert.equal((await pending).status, 200);
    assert.equal((await adminGet<LbState>(lb, "/admin/state")).replicas[0]?.healthy, true);
  } finally {
    await lb.close();
    await oldEngine.close().catch(() => undefined);
    await newEngine.close();
  }
});
