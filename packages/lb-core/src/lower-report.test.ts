// One "lower" cached-token report trims the index of that prompt's blocks past what the engine
// served, and nothing else: not the replica's other conversations, whichever order the proxy applies
// the first-byte learn and the completion in (a non-streamed answer's headers, body and end arrive in
// one tick, so its completion comes first). A rule that dropped the replica's routes learned before
// the lost block (to close holes in shared prefixes) erased 802 of 822 routes here (review r39/5).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { traceBlockKeys } from "@meridian/routing";
import { testCore } from "./test-helpers";
import type { LbCore } from "./lb-core";

const TPB = 16;
const chain = (root: number, n: number) => traceBlockKeys(Array.from({ length: n }, (_, i) => root * 1_000 + i));

function serve(lb: LbCore<string>, keys: readonly number[], at: number, cached: number, streamed: boolean) {
  const ticket = lb.admit("r", { keys, sessionKey: `s${keys[0]}`, model: null, hop: 0, inputTokens: keys.length * TPB, tokensPerBlock: TPB }, at);
  assert.equal(lb.route(ticket, at).kind, "replica");
  const usage = { status: 200, error: null, usage: { promptTokens: keys.length * TPB, completionTokens: 1, cachedTokens: cached } };
  const outcome = { ...usage, reply: "", outputEvents: 1, ttftMs: 1, e2eMs: 2 };
  if (streamed) {
    // stream: the first byte (first token) comes before the end; its learn runs in between
    const first = lb.headersReceived(ticket, 200, at + 100);
    if (first) lb.learn(first, at + 100);
    const done = lb.complete(ticket, outcome, at + 500);
    if (done.learn) lb.learn(done.learn, at + 500);
    return done;
  }
  // non-stream, as the proxy runs it: headers, body and end in one tick; both learns are setImmediate'd
  const first = lb.headersReceived(ticket, 200, at + 100);
  const done = lb.complete(ticket, outcome, at + 100);
  if (first) lb.learn(first, at + 101);
  if (done.learn) lb.learn(done.learn, at + 101);
  return done;
}

function scenario(streamed: boolean) {
  const lb = testCore({ policy: "prefix-cache", replicas: [{ id: "a", url: "http://a.test/", region: "us", model: "m" }] });
  const others = Array.from({ length: 40 }, (_, i) => chain(100 + i, 20));
  others.forEach((keys, i) => serve(lb, keys, 1_000 * i, 0, streamed)); // 40 conversations, 800 routes
  const x1 = chain(1, 20);
  serve(lb, x1, 50_000, 0, streamed); // conversation X, turn 1
  const x2 = [...x1, ...chain(2, 4)];
  lb.learn({ index: "local", keys: x2.slice(0, 22), targetId: "a" }, 50_500); // next-turn learn (prompt + reply)
  const before = lb.index.stats().routes;
  // Turn 2, 20 s later. The engine served X's turn-1 prompt from cache but not the 2 reply blocks
  // (its page size, or a chat template that re-renders the reply): a "lower" report by 2 blocks.
  const done = serve(lb, x2, 70_000, 20 * TPB, streamed);
  assert.equal(done.cacheReport?.feedback.verdict, "lower");
  const held = others.filter((k) => lb.index.match(k, 70_600, ["a"]).depthByReplica.get("a") === 20).length;
  return { before, trimmed: done.cacheReport!.feedback.trimmed, held };
}

describe("a lower cached-token report through the LB core", () => {
  it("streamed: the report removes nothing of the other conversations", () => {
    const r = scenario(true);
    assert.equal(r.held, 40);
  });
  it("non-streamed: the report must not erase the 40 other conversations the engine still holds", () => {
    const r = scenario(false);
    assert.ok(r.trimmed <= 4, `one report about 2 of X's blocks removed ${r.trimmed} routes (of ${r.before})`);
    assert.equal(r.held, 40, `conversations still predicted on replica a: ${r.held} of 40`);
  });
});
