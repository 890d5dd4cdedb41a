// The LB core runs on coreNow() (core-clock.ts), which a step of the system clock cannot move. An NTP
// correction after a VM resumes is simulated by replacing Date.now for the test's duration: stepped
// back an hour, a held request must still be refused after queueMaxWaitMs, not an hour later; stepped
// forward, the hold queue must not expire at once nor the last scrape look an hour old. Fake engines
// and the LB on loopback, port 0; closed by handle. While the clock is stepped, waits poll on
// performance.now() (the helpers' waitFor times itself on Date.now()).
import { strict as assert } from "node:assert";
import { test } from "node:test";
import type { LbState } from "@meridian/protocol";
import { request } from "undici";
import { adminGet, chatBody, completionJson, type HoldingEngine, lbConfig, startHoldingEngine, startLb, waitFor } from "../test/helpers";

const STEP_MS = 3_600_000;

interface Outcome {
  status: number;
  code: string | undefined;
}

/** Sends a chat completion; resolves with its status and error code once it is answered. */
function chat(url: string, text: string): Promise<Outcome> {
  return request(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(chatBody(text)) }).then(
    async (r) => {
      const body = (await r.body.json()) as { error?: { code?: string } };
      return { status: r.statusCode, code: body.error?.code };
    },
  );
}

/** `promise`'s value, or null when `ms` of monotonic time pass first. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  try {
    return await Promise.race([promise, bound]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls until `check` holds, timed on performance.now(); throws after `timeoutMs`. */
async function until(what: string, check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** An LB with one replica taking one request at a time: the first request takes the slot, the next waits. */
async function startOneSlotLb(engine: HoldingEngine, extra: Parameters<typeof lbConfig>[3]) {
  const config = lbConfig("lb-us", "us-ashburn", [engine], extra);
  config.replicas = (config.replicas ?? []).map((r) => ({ ...r, maxConcurrency: 1 }));
  return startLb(config);
}

test("a held request is refused after queueMaxWaitMs even when the wall clock steps back an hour", async () => {
  const engine = await startHoldingEngine("us-1", "us-ashburn");
  const lb = await startOneSlotLb(engine, { limits: { queueMaxWaitMs: 500 } });
  const realNow = Date.now;
  try {
    void chat(lb.url, "first").catch(() => {});
    await waitFor("first request at the engine", () => engine.held.length === 1);
    const held = chat(lb.url, "second");
    await waitFor("second request held", () => lb.balancer.core.queue.length === 1);
    Date.now = () => realNow() - STEP_MS;
    // Bounded at 20× queueMaxWaitMs: on the wall clock the request would wait an hour more.
    const outcome = await within(held, 10_000);
    assert.ok(outcome !== null, `held request still waiting long after queueMaxWaitMs (queue length ${lb.balancer.core.queue.length})`);
    assert.deepEqual(outcome, { status: 503, code: "queue_timeout" });
    assert.equal(lb.balancer.core.queue.length, 0);
  } finally {
    Date.now = realNow;
    await lb.close();
    await engine.close();
  }
});

test("a forward step of the wall clock neither expires the hold queue nor makes the last scrape look stale", async () => {
  const engine = await startHoldingEngine("us-1", "us-ashburn");
  // Scrapes only at start (and when the test asks): the warmup scrape's age is what the step would distort.
  const lb = await startOneSlotLb(engine, {
    limits: { queueMaxWaitMs: 60_000 },
    probes: { rttIntervalMs: 200, scrapeIntervalMs: 600_000, unhealthyAfter: 2 },
  });
  const realNow = Date.now;
  try {
    const first = chat(lb.url, "first");
    await waitFor("first request at the engine", () => engine.held.length === 1);
    let answered: Outcome | null = null;
    const held = chat(lb.url, "second").then((outcome) => (answered = outcome));
    await waitFor("second request held", () => lb.balancer.core.queue.length === 1);
    Date.now = () => realNow() + STEP_MS;

    const state = await adminGet<LbState>(lb, "/admin/state");
    const ageMs = state.replicas[0]?.scrape.ageMs;
    assert.ok(typeof ageMs === "number" && ageMs < STEP_MS, `the warmup scrape looks ${ageMs} ms old after the step`);
    // A scrape drains the hold queue (with the core's now): on the wall clock, the held request would
    // have waited an hour and be refused here.
    await lb.balancer.scrapeNow();
    assert.equal(lb.balancer.core.queue.length, 1, "the held request was expired by the clock step");
    assert.equal(answered, null);

    // The slot frees: the held request goes to the engine and is served.
    engine.held[0]?.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("one"));
    assert.equal((await first).status, 200);
    await until("held request at the engine", () => engine.held.length === 2);
    engine.held[1]?.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("two"));
    assert.equal((await held).status, 200);
  } finally {
    Date.now = realNow;
    await lb.close();
    await engine.close();
  }
});
