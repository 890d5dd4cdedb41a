// A config push changes the LB's targets under requests in flight: new connection limits reach the
// replica's connections (those already waiting keep the limits they were sent under), and a replica
// that is dropped or moved to a new URL finishes the streams it carries, while a shutdown still ends
// them at once. Fake engines and the LB on loopback, port 0; closed by handle.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { Pool } from "undici";
import type { LbConfigInput, LbState } from "@meridian/protocol";
import { adminGet, adminPutConfig, chatBody, completionJson, lbConfig, post, servedBy, sseChunk, startHoldingEngine, startLb, waitFor } from "../test/helpers";

const CHAT = "/v1/chat/completions";

test("a pushed headersTimeoutMs reaches the replica's connections; a request sent under the old one ends 504 and the replica stays healthy", async () => {
  const engine = await startHoldingEngine("us-1", "us-ashburn");
  const oldTimeoutMs = 1_000;
  // Probes far apart: a replica wrongly marked unreachable would stay so until the test looked.
  const v1 = lbConfig("lb-us", "us-ashburn", [engine], {
    limits: { headersTimeoutMs: oldTimeoutMs },
    probes: { rttIntervalMs: 60_000, scrapeIntervalMs: 60_000, unhealthyAfter: 2 },
  });
  const lb = await startLb(v1);
  const witness = new Pool(engine.url, { headersTimeout: oldTimeoutMs });
  try {
    const sentBefore = post(`${lb.url}${CHAT}`, chatBody("sent under the old limit"));
    await waitFor("the first request at the engine", () => engine.held.length === 1);
    await adminPutConfig(lb, { ...v1, version: 2, limits: { headersTimeoutMs: 60_000 } });
    // It keeps the limit it was sent under: a slow replica, not an unreachable one.
    const cut = await sentBefore;
    assert.equal(cut.status, 504, cut.text);
    assert.equal(JSON.parse(cut.text).error.code, "upstream_timeout");
    assert.equal((await adminGet<LbState>(lb, "/admin/state")).replicas[0]?.healthy, true);

    const sentAfter = post(`${lb.url}${CHAT}`, chatBody("sent under the new limit"));
    await waitFor("the second request at the engine", () => engine.held.length === 2);
    // A client holding the old limit, sent later, gives up first; the LB's request is still waiting.
    await assert.rejects(witness.request({ method: "POST", path: CHAT, body: "{}" }), { code: "UND_ERR_HEADERS_TIMEOUT" });
    assert.equal(engine.held[1]?.closed, false);
    engine.held[1]?.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("in time"));
    const answered = await sentAfter;
    assert.equal(answered.status, 200, answered.text);
    assert.equal(JSON.parse(answered.text).choices[0].message.content, "in time");
  } finally {
    await witness.destroy();
    await lb.close();
    await engine.close();
  }
});

/** Starts a stream through the LB; resolves with everything the client received. */
function stream(lb: { url: string }, text: string): Promise<string> {
  return post(`${lb.url}${CHAT}`, chatBody(text, { stream: true })).then((result) => result.text);
}

test("a replica moved to a new URL, or dropped, by a config push finishes the streams it was serving", async () => {
  const first = await startHoldingEngine("us-a", "us-ashburn");
  const second = await startHoldingEngine("us-b", "us-ashburn");
  const v1 = lbConfig("lb-us", "us-ashburn", [first]);
  const lb = await startLb(v1);
  try {
    const moved = stream(lb, "on the URL that changes");
    await waitFor("the stream at the first engine", () => first.held.length === 1);
    const onFirst = first.held[0]!;
    onFirst.res.writeHead(200, { "content-type": "text/event-stream" }).write(sseChunk("before "));
    // Same replica id, new URL.
    const v2: LbConfigInput = { ...v1, version: 2, replicas: [{ ...v1.replicas![0]!, url: second.url }] };
    await adminPutConfig(lb, v2);
    onFirst.res.end(`${sseChunk("after")}data: [DONE]\n\n`);
    const movedText = await moved;
    assert.match(movedText, /before .*after.*data: \[DONE\]/s);
    assert.doesNotMatch(movedText, /"error"/);

    const dropped = stream(lb, "on the replica that goes");
    await waitFor("the stream at the new URL", () => second.held.length === 1);
    const onSecond = second.held[0]!;
    onSecond.res.writeHead(200, { "content-type": "text/event-stream" }).write(sseChunk("before "));
    await adminPutConfig(lb, { ...lbConfig("lb-us", "us-ashburn", [first]), version: 3 });
    onSecond.res.end(`${sseChunk("after")}data: [DONE]\n\n`);
    const droppedText = await dropped;
    assert.match(droppedText, /before .*after.*data: \[DONE\]/s);
    assert.doesNotMatch(droppedText, /"error"/);

    // New requests go to the replica the config now names.
    const next = post(`${lb.url}${CHAT}`, chatBody("after the pushes"));
    await waitFor("the next request at the first engine", () => first.held.length === 2);
    first.held[1]?.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("ok"));
    assert.equal(servedBy(await next), "us-a");
  } finally {
    await lb.close();
    await first.close();
    await second.close();
  }
});

test("a shutdown ends at once a stream still running on a replica a config push dropped", async () => {
  const first = await startHoldingEngine("us-a", "us-ashburn");
  const second = await startHoldingEngine("us-b", "us-ashburn");
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [first]));
  try {
    const running = stream(lb, "still running at shutdown");
    await waitFor("the stream at the engine", () => first.held.length === 1);
    first.held[0]?.res.writeHead(200, { "content-type": "text/event-stream" }).write(sseChunk("before "));
    await adminPutConfig(lb, { ...lbConfig("lb-us", "us-ashburn", [second]), version: 2 });
    await lb.close();
    const text = await running;
    assert.match(text, /before .*"code":"shutting_down"/s);
    await waitFor("the upstream request ended", () => first.held[0]?.closed === true);
  } finally {
    await lb.close();
    await first.close();
    await second.close();
  }
});
