// The first-byte deadline: derived from a request's expected time to first byte on its replica, with a
// floor and a cap, learned per replica; and when a stuck request may move (redispatch.ts).
import { strict as assert } from "node:assert";
import { describe, it } from "node:test";
import { chatBlockKeys } from "@meridian/routing";
import { type LbConfigInput, parseLbConfig } from "@meridian/protocol";
import {
  FIRST_BYTE_SLACK,
  FirstByteHistory,
  firstByteDeadline,
  PRIOR_DECODE_MS_PER_TOKEN,
  PRIOR_PREFILL_MS_PER_TOKEN,
  RATE_SAMPLE_MIN_TOKENS,
} from "./deadline";
import type { LbCore } from "./lb-core";
import { servedWithUsage, testCore } from "./test-helpers";
import { isRetryableStatus } from "./redispatch";

const base = { rttMs: 2, stream: true, maxOutputTokens: null, floorMs: 1_000, capMs: 120_000 };

describe("first-byte deadline", () => {
  it("is the floor for a small request on a replica with no history", () => {
    const plan = firstByteDeadline({ ...base, tokensAhead: 100, history: new FirstByteHistory() });
    assert.equal(plan.deadlineMs, 1_000);
    assert.equal(plan.expectedMs, 2 + 100 * PRIOR_PREFILL_MS_PER_TOKEN);
  });

  it("grows with the tokens ahead of the request, up to the cap", () => {
    const history = new FirstByteHistory();
    const medium = firstByteDeadline({ ...base, tokensAhead: 20_000, history });
    assert.equal(medium.deadlineMs, FIRST_BYTE_SLACK * (2 + 20_000 * PRIOR_PREFILL_MS_PER_TOKEN));
    assert.equal(firstByteDeadline({ ...base, tokensAhead: 10_000_000, history }).deadlineMs, 120_000);
  });

  it("learns a replica's prefill rate and overhead from its answers", () => {
    const history = new FirstByteHistory();
    // 40 ms beyond the RTT for small requests; 10k tokens/s on large ones.
    for (let i = 0; i < 50; i++) {
      history.observeFirstByte(200, 42, 2);
      history.observeFirstByte(20_000, 2 + 40 + 2_000, 2);
    }
    assert.ok(Math.abs((history.overheadMs ?? 0) - 40) < 0.5);
    assert.ok(Math.abs((history.prefillMsPerToken ?? 0) - 0.1) < 0.005);
    const plan = firstByteDeadline({ ...base, tokensAhead: 20_000, history });
    assert.ok(Math.abs(plan.deadlineMs - FIRST_BYTE_SLACK * (2 + 40 + 2_000)) < 50);
    // The same request on a replica with no history gets a far more generous deadline.
    assert.ok(firstByteDeadline({ ...base, tokensAhead: 20_000, history: new FirstByteHistory() }).deadlineMs > 5 * plan.deadlineMs);
  });

  it("samples with few tokens ahead teach the overhead, not the per-token rate", () => {
    const history = new FirstByteHistory();
    history.observeFirstByte(RATE_SAMPLE_MIN_TOKENS - 1, 300, 0);
    assert.equal(history.prefillMsPerToken, null);
    assert.equal(history.overheadMs, 300);
  });

  it("a non-streamed response's first byte is its last: max_tokens × decode time is expected too", () => {
    const history = new FirstByteHistory();
    const plan = firstByteDeadline({ ...base, stream: false, maxOutputTokens: 100, tokensAhead: 100, history });
    assert.equal(plan.expectedMs, 2 + 100 * PRIOR_PREFILL_MS_PER_TOKEN + 100 * PRIOR_DECODE_MS_PER_TOKEN);
    history.observeDecode({ outputTokens: 100, sequences: 1 }, 1_000);
    assert.equal(history.decodeMsPerToken, 10);
    // Without max_tokens nothing bounds the expectation: the cap.
    assert.equal(firstByteDeadline({ ...base, stream: false, tokensAhead: 100, history }).deadlineMs, 120_000);
  });

  it("a stream of n choices teaches the time per token of one choice, not of their sum", () => {
    // 8 choices of 10 tokens decoded side by side in 300 ms: usage.completion_tokens says 80.
    const history = new FirstByteHistory();
    history.observeDecode({ outputTokens: 80, sequences: 8 }, 300);
    assert.equal(history.decodeMsPerToken, 30);
    // A non-streamed reply of 100 tokens is then expected to take 100 decode steps of 30 ms.
    const plan = firstByteDeadline({ ...base, stream: false, maxOutputTokens: 100, tokensAhead: 0, history });
    assert.equal(plan.expectedMs, 2 + 100 * 30);
    // Fewer tokens than sequences (choices that stopped at once) is less than a token each: no sample.
    history.observeDecode({ outputTokens: 4, sequences: 8 }, 300);
    assert.equal(history.decodeMsPerToken, 30);
  });

  it("the cap wins over a floor set above it, and nonsense samples teach nothing", () => {
    assert.equal(firstByteDeadline({ ...base, floorMs: 5_000, capMs: 600, tokensAhead: 0, history: new FirstByteHistory() }).deadlineMs, 600);
    const history = new FirstByteHistory();
    history.observeFirstByte(5_000, Number.NaN, 0);
    history.observeDecode({ outputTokens: 0, sequences: 1 }, 10);
    const { overheadMs, prefillMsPerToken, decodeMsPerToken } = history;
    assert.deepEqual({ overheadMs, prefillMsPerToken, decodeMsPerToken }, { overheadMs: null, prefillMsPerToken: null, decodeMsPerToken: null });
  });
});

const replicaConfig = (id: string, region = "us") => ({ id, url: `http://${id}.test/`, region, model: "m" });

const core = (extra: Partial<LbConfigInput> = {}): LbCore<string> =>
  testCore({ schema: "meridian.lb-config/2", policy: "round-robin", limits: { firstByteMinMs: 500, headersTimeoutMs: 60_000 }, ...extra });

const keys = chatBlockKeys([{ role: "user", content: "x".repeat(400) }]);
const admitInput = (promptChars: number) => ({ keys, sessionKey: "s", model: null, hop: 0, promptChars });

describe("the core's first-byte deadline and re-dispatch", () => {
  it("counts the replica's in-flight tokens ahead of a request, this one's included", () => {
    const lb = core();
    // The driver asks right after each placement.
    const placed = ["r1", "r2", "r3"].map((id) => {
      const ticket = lb.admit(id, admitInput(40_000), 0);
      lb.route(ticket, 0);
      return { ticket, plan: lb.firstByteDeadline(ticket, { stream: true, maxOutputTokens: null }) };
    });
    const [first, , third] = placed.map((p) => p.ticket) as [(typeof placed)[0]["ticket"], unknown, (typeof placed)[0]["ticket"]];
    const [alone, , behind] = placed.map((p) => p.plan) as [(typeof placed)[0]["plan"], unknown, (typeof placed)[0]["plan"]];
    // Round robin: r1 and r3 on the same replica.
    assert.equal(first.target?.id, third.target?.id);
    assert.ok(behind.tokensAhead > alone.tokensAhead);
    assert.equal(behind.tokensAhead, 2 * first.view.inputTokens);
    assert.ok(behind.deadlineMs > alone.deadlineMs);
  });

  it("learns from the first bytes it is told about", () => {
    const lb = core();
    const ticket = lb.admit("r", admitInput(40_000), 0);
    lb.route(ticket, 0);
    const plan = lb.firstByteDeadline(ticket, { stream: true, maxOutputTokens: null });
    lb.firstByteObserved(ticket, plan, 2_000);
    const history = lb.replicas.get(ticket.target?.id ?? "")?.firstByte;
    assert.ok((history?.prefillMsPerToken ?? 0) > 0);
  });

  it("a forward's deadline is its whole prompt's expected time at the peer, learned from the peer's answers, not the cap", () => {
    const lb = core({ crossRegion: "via-peer", replicas: [replicaConfig("a")], peers: [{ id: "lb-eu", url: "http://eu.test/", region: "eu" }] });
    lb.scrapeSucceeded("a", { running: 8, waiting: 2, usedTokens: 0 }, 0); // a is full: forwarded
    lb.peerReported("lb-eu", { lbId: "lb-eu", region: "eu", time: 0, configVersion: 1, queueLength: 0, availableReplicas: 1, replicas: [] }, 5, 0);
    const ticket = lb.admit("r", admitInput(40_000), 0);
    assert.equal(lb.route(ticket, 0).kind, "peer");
    const plan = lb.firstByteDeadline(ticket, { stream: true, maxOutputTokens: null });
    const peer = lb.peers.get("lb-eu");
    assert.equal(plan.tokensAhead, ticket.view.inputTokens);
    assert.equal(plan.expectedMs, (peer?.rtt.ms ?? 0) + ticket.view.inputTokens * PRIOR_PREFILL_MS_PER_TOKEN);
    assert.ok(plan.deadlineMs < 60_000, `a forward waits up to the cap: ${plan.deadlineMs} ms`);
    lb.firstByteObserved(ticket, plan, 3_000);
    assert.equal(peer?.firstByte.prefillMsPerToken, null, "learned before the answer said what the peer held");
    lb.complete(ticket, servedWithUsage(ticket.view.inputTokens, 0), 4_000);
    assert.ok((peer?.firstByte.prefillMsPerToken ?? 0) > 0, "the peer's answer taught nothing");
  });

  it("a peer's fast cache hits do not shorten the deadline of a forward whose prompt it may not hold", () => {
    const lb = core({
      crossRegion: "via-peer",
      limits: { firstByteMinMs: 2_000, headersTimeoutMs: 120_000 },
      replicas: [replicaConfig("a")],
      peers: [{ id: "lb-eu", url: "http://eu.test/", region: "eu" }],
    });
    const forward = (text: string, at: number, firstByteMs: number | null, cachedShare = 0) => {
      lb.scrapeSucceeded("a", { running: 8, waiting: 2, usedTokens: 0 }, at); // a is full: forwarded
      lb.peerReported("lb-eu", { lbId: "lb-eu", region: "eu", time: at, configVersion: 1, queueLength: 0, availableReplicas: 1, replicas: [] }, 5, at);
      const ticket = lb.admit(
        `r${at}`,
        { keys: chatBlockKeys([{ role: "user", content: text }]), sessionKey: text.slice(0, 8), model: null, hop: 0, promptChars: text.length },
        at,
      );
      assert.equal(lb.route(ticket, at).kind, "peer");
      const plan = lb.firstByteDeadline(ticket, { stream: true, maxOutputTokens: null });
      if (firstByteMs !== null) {
        lb.firstByteObserved(ticket, plan, firstByteMs);
        lb.complete(ticket, servedWithUsage(ticket.view.inputTokens, Math.round(cachedShare * ticket.view.inputTokens)), at + firstByteMs);
      }
      return plan;
    };
    // A conversation of ~40k tokens: its first turn took the peer 8 s; the next twenty, all but their
    // last turn cached there, 300 ms each (more than a window of any size would hold).
    const conversation = "c".repeat(160_000);
    forward(conversation, 0, 8_000);
    for (let turn = 2; turn <= 21; turn++) forward(conversation + " more".repeat(turn), turn * 1_000, 300, 0.99);
    // A new conversation of the same size, which the peer holds nothing of.
    const plan = forward("n".repeat(160_000), 30_000, null);
    assert.ok(plan.deadlineMs >= 8_000, `deadline ${Math.round(plan.deadlineMs)} ms, below the 8,000 ms such a prompt took there`);
    assert.ok(plan.deadlineMs < 120_000, "a fast peer's long forward is left to the cap");
  });

  it("a peer whose engines report no cached tokens teaches no rate: a forward's deadline keeps the prior", () => {
    const lb = core({ crossRegion: "via-peer", replicas: [replicaConfig("a")], peers: [{ id: "lb-eu", url: "http://eu.test/", region: "eu" }] });
    lb.scrapeSucceeded("a", { running: 8, waiting: 2, usedTokens: 0 }, 0);
    lb.peerReported("lb-eu", { lbId: "lb-eu", region: "eu", time: 0, configVersion: 1, queueLength: 0, availableReplicas: 1, replicas: [] }, 5, 0);
    const ticket = lb.admit("r", admitInput(40_000), 0);
    assert.equal(lb.route(ticket, 0).kind, "peer");
    lb.firstByteObserved(ticket, lb.firstByteDeadline(ticket, { stream: true, maxOutputTokens: null }), 300);
    lb.complete(
      ticket,
      { ...servedWithUsage(ticket.view.inputTokens, 0), usage: { promptTokens: ticket.view.inputTokens, completionTokens: 1, cachedTokens: null } },
      400,
    );
    assert.equal(lb.peers.get("lb-eu")?.firstByte.prefillMsPerToken, null);
  });

  it("a forward answered across its peer's failover flap teaches the record now configured for that URL", () => {
    const peer = { id: "lb-eu", url: "http://eu.test/", region: "eu" };
    const lb = core({ crossRegion: "via-peer", replicas: [replicaConfig("a")], peers: [peer] });
    const config = (version: number, peers: unknown[]) => parseLbConfig({ ...lb.config, version, peers } as LbConfigInput);
    lb.scrapeSucceeded("a", { running: 8, waiting: 2, usedTokens: 0 }, 0);
    lb.peerReported("lb-eu", { lbId: "lb-eu", region: "eu", time: 0, configVersion: 1, queueLength: 0, availableReplicas: 1, replicas: [] }, 5, 0);
    const ticket = lb.admit("r", admitInput(40_000), 0);
    assert.equal(lb.route(ticket, 0).kind, "peer");
    lb.firstByteObserved(ticket, lb.firstByteDeadline(ticket, { stream: true, maxOutputTokens: null }), 8_000);
    lb.applyConfig(config(2, []));
    lb.applyConfig(config(3, [peer]));
    lb.complete(ticket, servedWithUsage(ticket.view.inputTokens, 0), 9_000);
    assert.notEqual(lb.peers.get("lb-eu")?.firstByte.prefillMsPerToken ?? null, null, "the answer taught a discarded record");
  });

  it("a stuck request moves only when another replica can take it", () => {
    const lb = core();
    const ticket = lb.admit("r", admitInput(400), 0);
    lb.route(ticket, 0);
    for (const cause of ["deadline", "unhealthy"] as const) assert.equal(lb.canRedispatch(ticket, 0, cause), true);
    const other = [...lb.replicas.keys()].find((id) => id !== ticket.target?.id) as string;
    lb.markUnreachable(other);
    for (const cause of ["deadline", "unhealthy"] as const) assert.equal(lb.canRedispatch(ticket, 0, cause), false);
    lb.probeSucceeded(other, 1);
    // After its one retry it stays where it is.
    assert.equal(lb.retry(ticket, 0).kind, "replica");
    for (const cause of ["deadline", "unhealthy"] as const) assert.equal(lb.canRedispatch(ticket, 0, cause), false);
  });

  it("past its deadline a request leaves its replica only for a target that can take it now: a slow answer never becomes a 503", () => {
    const lb = core({ limits: { firstByteMinMs: 500, headersTimeoutMs: 60_000, queueMaxWaitMs: 30_000 } });
    lb.scrapeSucceeded("b", { running: 8, waiting: 2, usedTokens: 0 }, 0); // b is full, and stays so
    const ticket = lb.admit("r", admitInput(400), 0);
    const placed = lb.route(ticket, 0);
    assert.ok(placed.kind === "replica" && placed.replicaId === "a");
    // Moved into the hold queue, a excluded, it could only wait for b, and be refused at the wait bound
    // (503 queue_timeout) with a idle: it stays on a, whose answer is late but comes.
    assert.equal(lb.canRedispatch(ticket, 2_000, "deadline"), false, "moved off a to wait for a full replica");
    lb.scrapeSucceeded("b", { running: 8, waiting: 2, usedTokens: 0 }, 2_000 + 30_000);
    assert.equal(lb.canRedispatch(ticket, 2_000 + 30_000, "deadline"), false);
    assert.equal(lb.headersReceived(ticket, 200, 40_000)?.targetId, "a");
    assert.equal(
      lb.complete(ticket, { status: 200, error: null, usage: null, reply: "", outputEvents: 1, ttftMs: 40_000, e2eMs: 40_001 }, 40_001).telemetry().status,
      200,
    );
    assert.equal(lb.queue.totalHeld, 0);
    // Once b can take it now, a late request moves there.
    lb.scrapeSucceeded("b", { running: 8, waiting: 2, usedTokens: 0 }, 41_000);
    const late = lb.admit("r2", admitInput(400), 41_000);
    assert.ok(lb.route(late, 41_000).kind === "replica" && late.target?.id === "a");
    lb.scrapeSucceeded("b", { running: 0, waiting: 0, usedTokens: 0 }, 42_000);
    assert.equal(lb.canRedispatch(late, 42_000, "deadline"), true);
    const moved = lb.retry(late, 42_000);
    assert.ok(moved.kind === "replica" && moved.replicaId === "b");
  });

  it("502, 503 and 504 move a request; a 500 is the engine's answer to its body", () => {
    assert.deepEqual(
      [500, 501, 502, 503, 504, 505, 429, 400].filter((status) => isRetryableStatus(status)),
      [502, 503, 504],
    );
    const lb = core();
    const ticket = lb.admit("r", admitInput(400), 0);
    lb.route(ticket, 0);
    assert.equal(lb.mayRetryAfterStatus(ticket, 500), false);
    assert.equal(lb.mayRetryAfterStatus(ticket, 503), true);
  });

  it("a prompt above limits.maxPromptTokens is refused with OpenAI's context_length_exceeded", () => {
    const lb = core({ limits: { maxPromptTokens: 1_000 } });
    assert.equal(lb.checkPromptTokens({ promptChars: 400 }), null);
    const refusal = lb.checkPromptTokens({ promptChars: 100_000 });
    assert.equal(refusal?.status, 400);
    assert.equal(refusal?.code, "context_length_exceeded");
    // route() applies the same rule, so a driver that never asks (the simulator) refuses alike.
    const ticket = lb.admit("r", admitInput(100_000), 0);
    const placement = lb.route(ticket, 0);
    assert.equal(placement.kind === "fail" ? placement.failure.code : placement.kind, "context_length_exceeded");
  });
});
