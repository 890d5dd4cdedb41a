// d795bfb passes the client's x-request-id to the engine. vLLM makes X-Request-Id its engine request
// id and refuses a second request with an id already running ("Request id X already running", a 400
// since vllm#11036; with --api-server-count > 1 the engine misbehaves, vllm#27711). Two concurrent
// requests carrying one id (a service mesh propagating its x-request-id to every outbound call, or
// two tenants whose ids collide) now reach one engine under the same engine id. This fake engine
// behaves as vLLM does; the fix sends the engine the client's id with a suffix unique to the attempt.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import type { RunningProxy } from "./index";
import { chatBody, lbConfig, post, startLb } from "../test/helpers";
import { startRecordingEngine } from "../test/recording-engine";

const running = new Set<string>();
let arrivals = 0;
let held: (() => void)[] = [];
let engine: Awaited<ReturnType<typeof startRecordingEngine>>;
let lb: RunningProxy;

before(async () => {
  engine = await startRecordingEngine((seen, res) => {
    arrivals++;
    const id = seen.headers["x-request-id"];
    if (typeof id === "string" && running.has(id)) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `Request id ${id} already running.`, type: "BadRequestError", code: 400 } }));
    } else {
      if (typeof id === "string") running.add(id);
      // Held until both requests are in: both are running at once.
      held.push(() => {
        if (typeof id === "string") running.delete(id);
        res.writeHead(200, { "content-type": "application/json", ...(typeof id === "string" ? { "x-request-id": id } : {}) });
        res.end(JSON.stringify({ choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }] }));
      });
    }
    if (arrivals % 2 === 0) {
      for (const answer of held) answer();
      held = [];
    }
  });
  lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
});
after(async () => {
  await lb?.close();
  await engine?.close();
});

test("two concurrent client requests with one x-request-id are both served, and each client gets its own id back", async () => {
  const headers = { "x-request-id": "mesh-7f3a" };
  const [a, b] = await Promise.all([
    post(`${lb.url}/v1/chat/completions`, chatBody("first question"), headers),
    post(`${lb.url}/v1/chat/completions`, chatBody("another question"), headers),
  ]);
  assert.deepEqual([a.status, b.status], [200, 200], `${a.text} | ${b.text}`);
  // The engine's ids still name the client's request (its logs, chatcmpl-<id>), one per attempt.
  const ids = engine.seen.slice(-2).map((seen) => String(seen.headers["x-request-id"]));
  assert.ok(ids.every((id) => id.startsWith("mesh-7f3a-")) && ids[0] !== ids[1], ids.join(" "));
  assert.deepEqual([a.headers["x-request-id"], b.headers["x-request-id"]], ["mesh-7f3a", "mesh-7f3a"]);
});
