// What goes wrong with a peer LB, seen from the LB that forwards to it: a stream the peer cut (its SSE
// error event, then a clean end) is recorded as failed; forwarded streams holding every connection to
// the peer do not starve its polls, and a peer that stops answering gets one poll at a time; a request
// waiting on a peer that froze moves once its report goes stale; a forwarded stream's token usage is
// counted for the client's key. The peer is a fake LB (its report and its answers scripted) except
// where the real peer's part matters (usage).
import { strict as assert } from "node:assert";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";
import type { LbConfigInput, LbState } from "@meridian/protocol";
import { generateClientKey, sha256Hex } from "@meridian/protocol/credentials";
import { parsePrometheusText, type RunningProxy } from "../src/index";
import { sseErrorEvent } from "../src/sse";
import { scrapeWithClientSeries } from "./client-series";
import {
  adminGet,
  adminPutConfig,
  chatBody,
  completionJson,
  lbConfig,
  MODEL,
  peerEntry,
  post,
  sseChunk,
  startHoldingEngine,
  startLb,
  waitFor,
  type HoldingEngine,
} from "./helpers";

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A fake peer LB: reports one free replica while `answerPolls`, and hands each forwarded request to
 * the test (in `forwards`). Counts the polls it received and the most it had open at once. */
interface FakePeer {
  url: string;
  forwards: { req: IncomingMessage; res: ServerResponse; closed: boolean }[];
  polls: number;
  maxOpenPolls: number;
  answerPolls: boolean;
  /** Snapshot keys sent with every report, whatever the poll asked for (null: none). */
  snapshot: number[] | null;
}

async function startFakePeer(): Promise<FakePeer> {
  let openPolls = 0;
  const peer: FakePeer = { url: "", forwards: [], polls: 0, maxOpenPolls: 0, answerPolls: true, snapshot: null };
  const server = createServer((req, res) => {
    if (req.url?.startsWith("/admin/peer")) {
      peer.polls++;
      openPolls++;
      peer.maxOpenPolls = Math.max(peer.maxOpenPolls, openPolls);
      res.on("close", () => openPolls--);
      if (!peer.answerPolls) return; // frozen: the poll gets no answer
      const report = {
        schema: "meridian.peer-report/1",
        lbId: "lb-eu",
        region: "eu-frankfurt",
        time: Date.now(),
        configVersion: 1,
        replicas: [],
        queueLength: 0,
        availableReplicas: 1,
        ...(peer.snapshot ? { snapshot: { keys: peer.snapshot, truncated: false } } : {}),
      };
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end(JSON.stringify(report));
    }
    const forward = { req, res, closed: false };
    res.on("close", () => (forward.closed = true));
    req.resume();
    req.on("end", () => peer.forwards.push(forward));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  peer.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return peer;
}

/** lb-us with one local replica of concurrency 1 (filled by the test to make it forward) and the
 * fake peer lb-eu. */
async function usWithFakePeer(peer: FakePeer, extra: Partial<LbConfigInput> = {}): Promise<{ lb: RunningProxy; usX: HoldingEngine }> {
  const usX = await startHoldingEngine("us-x", "us-ashburn");
  cleanups.push(() => usX.close());
  const config = lbConfig("lb-us", "us-ashburn", [], {
    crossRegion: "via-peer",
    replicas: [{ id: "us-x", url: usX.url, region: "us-ashburn", model: MODEL, engine: "sglang", maxConcurrency: 1 }],
    ...extra,
  });
  const lb = await startLb(config);
  cleanups.push(() => lb.close());
  await adminPutConfig(lb, { ...config, version: 2, peers: [{ id: "lb-eu", url: peer.url, region: "eu-frankfurt", credentialHashes: [] }] });
  await waitFor("peer polled and replica healthy", async () => {
    const state = await adminGet<LbState>(lb, "/admin/state");
    return state.peers[0]?.healthy && state.replicas.every((r) => r.healthy) ? true : undefined;
  });
  return { lb, usX };
}

async function metric(lb: RunningProxy, name: string, labels: Record<string, string>): Promise<number> {
  const text = await scrapeWithClientSeries(lb);
  return parsePrometheusText(text)
    .samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((total, s) => total + s.value, 0);
}

test("a forwarded stream the peer cut with its error event is recorded as failed; a whole one as served", async () => {
  const peer = await startFakePeer();
  const { lb, usX } = await usWithFakePeer(peer);
  const fill = post(`${lb.url}/v1/chat/completions`, chatBody("fill"));
  await waitFor("held at us-x", () => usX.held[0]);

  const cut = post(`${lb.url}/v1/chat/completions`, chatBody("cut at the peer", { stream: true }));
  const first = await waitFor("forwarded to the peer", () => peer.forwards[0]);
  first.res.writeHead(200, { "content-type": "text/event-stream" });
  first.res.write(sseChunk("partial"));
  // What a peer whose replica died mid-stream sends: its error event, then a clean end.
  first.res.end(sseErrorEvent("upstream replica eu-1 failed mid-stream: other side closed", "server_error", "upstream_error"));
  const cutResult = await cut;
  assert.match(cutResult.text, /"error"/, "the client saw the stream fail");

  const whole = post(`${lb.url}/v1/chat/completions`, chatBody("served whole by the peer", { stream: true }));
  const second = await waitFor("forwarded to the peer", () => peer.forwards[1]);
  second.res.writeHead(200, { "content-type": "text/event-stream" });
  second.res.write(sseChunk("all of it"));
  second.res.end("data: [DONE]\n\n");
  assert.equal((await whole).status, 200);

  const events = await waitFor("both forwards recorded", () => {
    const forwarded = lb.balancer.telemetry.since(0).filter((e) => e.forwarded);
    return forwarded.length >= 2 ? forwarded : undefined;
  });
  assert.equal(events[0]?.status, 502, "the cut stream is a failure in telemetry");
  assert.match(events[0]?.error ?? "", /lb-eu ended the stream with an error: upstream replica eu-1 failed mid-stream/);
  assert.equal(events[1]?.status, 200, "a whole stream is still a success");
  assert.equal(events[1]?.error, null);
  assert.equal(await metric(lb, "meridian_lb_requests_total", { replica: "peer:lb-eu", status: "502" }), 1);
  assert.equal(await metric(lb, "meridian_lb_requests_total", { replica: "peer:lb-eu", status: "200" }), 1);
  // The client's key counts it as the LB does: a 502, though its 200 head had gone out.
  assert.equal(await metric(lb, "meridian_lb_client_requests_total", { key_id: "anonymous", status: "502" }), 1);
  assert.equal(await metric(lb, "meridian_lb_client_requests_total", { key_id: "anonymous", status: "200" }), 1);
  usX.held[0]?.res.end(completionJson("ok"));
  await fill;
});

test("forwarded streams holding every connection to a peer do not starve its polls", async () => {
  const peer = await startFakePeer();
  const { lb, usX } = await usWithFakePeer(peer, { limits: { maxConnectionsPerReplica: 2 } });
  const fill = post(`${lb.url}/v1/chat/completions`, chatBody("fill"));
  await waitFor("held at us-x", () => usX.held[0]);
  const streams = [0, 1].map((i) => post(`${lb.url}/v1/chat/completions`, chatBody(`forwarded ${i}`, { stream: true })));
  await waitFor("two forwarded streams at the peer", () => peer.forwards.length >= 2);
  for (const forward of peer.forwards) {
    forward.res.writeHead(200, { "content-type": "text/event-stream" });
    forward.res.write(sseChunk("tok"));
  }
  // Both connections of the forwards' pool are busy: polls still reach the peer, and it stays healthy.
  const before = peer.polls;
  await waitFor("five more polls while the streams hold the connections", () => peer.polls >= before + 5);
  assert.equal((await adminGet<LbState>(lb, "/admin/state")).peers[0]?.healthy, true);
  for (const forward of peer.forwards) forward.res.end("data: [DONE]\n\n");
  assert.deepEqual(
    (await Promise.all(streams)).map((r) => r.status),
    [200, 200],
  );
  usX.held[0]?.res.end(completionJson("ok"));
  await fill;
});

test("a peer that freezes gets one poll at a time, and a request waiting on it moves to a local replica", async () => {
  const peer = await startFakePeer();
  const { lb, usX } = await usWithFakePeer(peer, { limits: { headersTimeoutMs: 60_000 } });
  const fill = post(`${lb.url}/v1/chat/completions`, chatBody("fill"));
  const filled = await waitFor("held at us-x", () => usX.held[0]);
  const forwarded = post(`${lb.url}/v1/chat/completions`, chatBody("forwarded to the peer that freezes"));
  const stuck = await waitFor("forwarded to the peer", () => peer.forwards[0]);
  peer.answerPolls = false;
  const pollsBefore = peer.polls;
  await waitFor("lb-us sees the peer's report stale", async () =>
    (await adminGet<LbState>(lb, "/admin/state")).peers[0]?.healthy === false ? true : undefined,
  );
  // The request waiting on the frozen peer was taken off it (not left to headersTimeoutMs) ...
  await waitFor("the forward to the frozen peer abandoned", () => stuck.closed);
  // ... and is served by the local replica once that frees.
  filled.res.writeHead(200, { "content-type": "application/json" });
  filled.res.end(completionJson("ok"));
  await fill;
  const moved = await waitFor("the moved request at us-x", () => usX.held[1]);
  moved.res.writeHead(200, { "content-type": "application/json" });
  moved.res.end(completionJson("served here"));
  const result = await forwarded;
  assert.equal(result.status, 200, result.text);
  assert.equal(result.headers["x-meridian-replica"], "us-x");
  assert.equal(await metric(lb, "meridian_lb_redispatched_requests_total", { replica: "peer:lb-eu", reason: "peer_unhealthy" }), 1);
  // Polls time out one after another (1 s each at this interval), never piling up.
  await waitFor("two more polls of the frozen peer", () => peer.polls >= pollsBefore + 2, 10_000);
  assert.equal(peer.maxOpenPolls, 1, "one poll at a time");
});

test("a forwarded stream's token usage is counted for the client's key, and the client gets no usage it did not ask for", async () => {
  const keyId = "a1b2c3d4e5f6";
  const key = generateClientKey(keyId);
  const usX = await startHoldingEngine("us-x", "us-ashburn");
  const eu1 = await startHoldingEngine("eu-1", "eu-frankfurt");
  cleanups.push(
    () => usX.close(),
    () => eu1.close(),
  );
  const usConfig = lbConfig("lb-us", "us-ashburn", [], {
    crossRegion: "via-peer",
    clientAuth: { required: true, keys: [{ id: keyId, name: "team-a", region: "us-ashburn", sha256: sha256Hex(key) }] },
    replicas: [{ id: "us-x", url: usX.url, region: "us-ashburn", model: MODEL, engine: "sglang", maxConcurrency: 1 }],
  });
  const euConfig = lbConfig("lb-eu", "eu-frankfurt", [], {
    crossRegion: "via-peer",
    replicas: [{ id: "eu-1", url: eu1.url, region: "eu-frankfurt", model: MODEL, engine: "sglang" }],
  });
  const lbUs = await startLb(usConfig);
  const lbEu = await startLb(euConfig);
  cleanups.push(
    () => lbUs.close(),
    () => lbEu.close(),
  );
  await adminPutConfig(lbUs, { ...usConfig, version: 2, peers: [peerEntry(lbEu, "lb-eu", "eu-frankfurt")] });
  await adminPutConfig(lbEu, { ...euConfig, version: 2, peers: [peerEntry(lbUs, "lb-us", "us-ashburn")] });
  await waitFor("peer polled and replicas healthy", async () => {
    const state = await adminGet<LbState>(lbUs, "/admin/state");
    return state.peers[0]?.healthy && state.replicas.every((r) => r.healthy) ? true : undefined;
  });
  const auth = { authorization: `Bearer ${key}` };
  const fill = post(`${lbUs.url}/v1/chat/completions`, chatBody("fill"), auth);
  await waitFor("held at us-x", () => usX.held[0]);
  const reply = post(`${lbUs.url}/v1/chat/completions`, chatBody("forwarded", { stream: true }), auth);
  const held = await waitFor("forwarded to eu-1", () => eu1.held[0]);
  assert.deepEqual(JSON.parse(held.body).stream_options, { include_usage: true }, "usage is asked for through the peer");
  held.res.writeHead(200, { "content-type": "text/event-stream" });
  held.res.write(sseChunk("hello"));
  held.res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 70, completion_tokens: 5, total_tokens: 75 } })}\n\n`);
  held.res.end("data: [DONE]\n\n");
  const result = await reply;
  assert.equal(result.status, 200);
  assert.equal(result.headers["x-meridian-forwarded-to"], "lb-eu");
  assert.doesNotMatch(result.text, /"usage"/, "the client did not ask for usage");
  assert.match(result.text, /hello[\s\S]*data: \[DONE\]/);
  const counted = await waitFor("the key's tokens counted", async () => {
    const total = await metric(lbUs, "meridian_lb_client_tokens_total", { key_id: keyId });
    return total > 0 ? total : undefined;
  });
  assert.equal(counted, 75);
  usX.held[0]?.res.end(completionJson("ok"));
  await fill;
});

test("a peer report far larger than asked for is not parsed: the poll fails, and the LB goes on serving", async () => {
  const peer = await startFakePeer();
  const { lb, usX } = await usWithFakePeer(peer, { crossRegion: "direct" });
  // This LB routes directly and asks for no snapshot; the peer sends a million keys (some 8 MB).
  peer.snapshot = Array.from({ length: 1_000_000 }, (_, i) => 1_000_000_000 + i);
  const polled = peer.polls;
  await waitFor("a poll refused for its size", () => {
    const error = lb.balancer.core.peers.get("lb-eu")?.lastError ?? "";
    return peer.polls > polled && /peer report over \d+ bytes/.test(error) ? true : undefined;
  });
  const served = post(`${lb.url}/v1/chat/completions`, chatBody("still served"));
  (await waitFor("held at us-x", () => usX.held[0])).res.end(completionJson("ok"));
  assert.equal((await served).status, 200);
});
