// A replica's exporter may report +Inf, NaN or a negative gauge. Routing validates its inputs and
// throws on such a value, so one replica's bad scrape, stored as is, failed every later request (or
// threw out of scrapeSucceeded into the shell's timer). LbCore records it as a failed scrape instead.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chatBlockKeys, type ScrapedLoad } from "@meridian/routing";
import type { LbCore } from "./lb-core";
import { testCore } from "./test-helpers";

const _replica = (id: string) => ({ id, url: `http://${id}.test/`, region: "us", model: "m" });
const keys = chatBlockKeys([{ role: "user", content: "x".repeat(300) }]);
const idle: ScrapedLoad = { running: 0, waiting: 0, usedTokens: 0 };

const core = (): LbCore<string> => testCore({ schema: "meridian.lb-config/2", policy: "gorgo" });

const badLoads: [string, ScrapedLoad][] = [
  ["running +Inf", { running: Number.POSITIVE_INFINITY, waiting: 0, usedTokens: 0 }],
  ["waiting -1", { running: 1, waiting: -1, usedTokens: 0 }],
  ["running NaN", { running: Number.NaN, waiting: 0, usedTokens: 0 }],
  ["usedTokens -Inf", { running: 0, waiting: 0, usedTokens: Number.NEGATIVE_INFINITY }],
];

describe("a scrape with an unusable gauge", () => {
  for (const [name, bad] of badLoads) {
    it(`(${name}) is recorded as a failed scrape and requests still place`, () => {
      const lb = core();
      assert.equal(lb.scrapeSucceeded("a", bad, 1_000, { capacityTokens: 1_000, epoch: null }), false);
      lb.scrapeSucceeded("b", idle, 1_000);
      const a = lb.replicas.get("a")!;
      assert.equal(a.scrape.ok, false);
      assert.match(a.scrape.error ?? "", /^invalid gauge /);
      assert.equal(a.scrape.load, null);
      // The cache part of a rejected scrape is not taken either.
      assert.equal(a.engineCapacityTokens, null);
      for (let i = 0; i < 5; i++) {
        const ticket = lb.admit("job", { keys, sessionKey: `s${i}`, model: null, hop: 0, promptChars: 300 }, 1_001);
        const placement = lb.route(ticket, 1_001);
        assert.equal(placement.kind, "replica", placement.kind === "fail" ? placement.failure.message : placement.kind);
        lb.complete(ticket, { status: 200, error: null, usage: null, reply: "", outputEvents: 1, ttftMs: 5, e2eMs: 9 }, 1_002);
      }
    });
  }

  it("keeps the last good load (until it goes stale) and names the gauge in the replica's state", () => {
    const lb = core();
    const a = lb.replicas.get("a")!;
    lb.scrapeSucceeded("a", { running: 2, waiting: 0, usedTokens: 10 }, 1_000);
    lb.scrapeSucceeded("a", { running: 3, waiting: Number.POSITIVE_INFINITY, usedTokens: 0 }, 1_500);
    assert.deepEqual(a.freshLoad(1_500, lb.config.probes), { running: 2, waiting: 0, usedTokens: 10 });
    assert.equal(a.scrape.at, 1_000);
    assert.equal(a.scrape.error, "invalid gauge waiting: Infinity (must be a finite number >= 0)");
    const state = lb.state(1_500, { startedAt: 0, telemetry: { lastSeq: 0, bufferSize: 0 } });
    assert.match(JSON.stringify(state.replicas[0]), /invalid gauge waiting: Infinity/);
    // A good scrape clears it.
    lb.scrapeSucceeded("a", idle, 2_000);
    assert.equal(a.scrape.ok, true);
    assert.equal(a.scrape.error, null);
  });
});
