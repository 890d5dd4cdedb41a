import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EngineModel } from "./engine-model";
import type { DoneEvent, EngineEvent, EngineRequest, FirstTokenEvent } from "./engine-types";
import { PAPER_ENGINE_PARAMS, type EngineParams } from "./params";
import { PrefixCache } from "./prefix-cache";

const BASE: EngineParams = {
  maxRunning: 64,
  kvCapacityTokens: 1_000_000,
  prefillTokensPerSec: 10_000,
  prefillChunkTokens: 2_048,
  itlBaseMs: 5,
  itlPerSeqMs: 0.2,
  itlPerKTokMs: 0.05,
  blockTokens: 100,
  prefixCacheBlocks: 10_000,
  maxOutputTokens: 128,
  emitTokenEvents: false,
};

interface Arrival {
  time: number;
  request: EngineRequest;
}

/** Drives an engine on a virtual clock: arrivals and engine events in time order, until idle. */
function run(engine: EngineModel, arrivals: Arrival[]): EngineEvent[] {
  const pending = [...arrivals].sort((a, b) => a.time - b.time);
  const events: EngineEvent[] = [];
  let next = 0;
  for (let guard = 0; guard < 10_000_000; guard++) {
    const arrival = pending[next];
    const engineTime = engine.nextEventTime();
    if (arrival === undefined && engineTime === Number.POSITIVE_INFINITY) return events;
    if (arrival !== undefined && arrival.time <= engineTime) {
      engine.submit(arrival.request, arrival.time);
      next++;
    } else {
      events.push(...engine.advance(engineTime));
    }
  }
  throw new Error("engine did not go idle");
}

function request(id: string, inputTokens: number, outputTokens = 16, blockKeys: number[] = []): EngineRequest {
  return { id, inputTokens, maxOutputTokens: outputTokens, blockKeys };
}

function firstToken(events: EngineEvent[], id: string): FirstTokenEvent {
  const event = events.find((e): e is FirstTokenEvent => e.type === "first-token" && e.id === id);
  assert.ok(event, `no first-token for ${id}`);
  return event;
}

function done(events: EngineEvent[], id: string): DoneEvent {
  const event = events.find((e): e is DoneEvent => e.type === "done" && e.id === id);
  assert.ok(event, `no done for ${id}`);
  return event;
}

function keys(from: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => from + i);
}

/** A deterministic pseudo-random workload (LCG), with shared prefixes. */
function workload(count: number, seed: number): Arrival[] {
  let state = seed >>> 0;
  const rand = (): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  const arrivals: Arrival[] = [];
  let time = 0;
  for (let i = 0; i < count; i++) {
    time += rand() * 40;
    const conversation = Math.floor(rand() * 8);
    const blocks = 1 + Math.floor(rand() * 30);
    arrivals.push({
      time,
      request: request(`r${i}`, blocks * 100 - Math.floor(rand() * 50), 1 + Math.floor(rand() * 100), keys(conversation * 1000, blocks)),
    });
  }
  return arrivals;
}

describe("EngineModel", () => {
  it("is idle with no work", () => {
    const engine = new EngineModel("e", BASE);
    assert.equal(engine.nextEventTime(), Number.POSITIVE_INFINITY);
    assert.deepEqual(engine.advance(1000), []);
    assert.equal(engine.load().running, 0);
  });

  it("TTFT grows with the uncached tokens", () => {
    const ttft = (inputTokens: number): number => {
      const events = run(new EngineModel("e", BASE), [{ time: 0, request: request("a", inputTokens) }]);
      return firstToken(events, "a").time;
    };
    const small = ttft(1_000);
    const large = ttft(8_000);
    assert.ok(large > small * 4, `8k tokens ${large} ms vs 1k tokens ${small} ms`);
    // Prefill at 10k tokens/s: 8k tokens take about 800 ms plus step overheads.
    assert.ok(large >= 800 && large < 900, `ttft ${large}`);
  });

  it("TTFT grows with the queue ahead", () => {
    const alone = firstToken(run(new EngineModel("e", BASE), [{ time: 0, request: request("target", 2_000) }]), "target");
    const queued = run(new EngineModel("e", BASE), [
      ...Array.from({ length: 5 }, (_, i) => ({ time: 0, request: request(`ahead${i}`, 2_000) })),
      { time: 1, request: request("target", 2_000) },
    ]);
    const behind = firstToken(queued, "target");
    assert.ok(behind.time - 1 > alone.time * 3, `queued ttft ${behind.time - 1} vs alone ${alone.time}`);
  });

  it("a cached prefix cuts prefill and is reported", () => {
    const engine = new EngineModel("e", BASE);
    const first = run(engine, [{ time: 0, request: request("a", 5_000, 4, keys(1, 50)) }]);
    assert.equal(firstToken(first, "a").cachedTokens, 0);
    const start = done(first, "a").time + 10;
    const second = run(engine, [{ time: start, request: request("b", 5_500, 4, keys(1, 55)) }]);
    const hit = firstToken(second, "b");
    assert.equal(hit.cachedTokens, 5_000);
    assert.equal(hit.promptTokens, 5_500);
    const cold = firstToken(run(new EngineModel("e", BASE), [{ time: 0, request: request("b", 5_500, 4, keys(1, 55)) }]), "b");
    assert.equal(cold.cachedTokens, 0);
    assert.ok(hit.time - start < cold.time / 5, `warm ${hit.time - start} ms vs cold ${cold.time} ms`);
    assert.ok(engine.load().cacheHitRate > 0.4);
  });

  it("caches the reply blocks a caller passes as completionBlockKeys", () => {
    const engine = new EngineModel("e", BASE);
    const turn1: EngineRequest = { ...request("t1", 1_000, 8, keys(1, 10)), completionBlockKeys: keys(1, 12) };
    const end = done(run(engine, [{ time: 0, request: turn1 }]), "t1").time;
    const turn2 = run(engine, [{ time: end + 1, request: request("t2", 1_500, 8, keys(1, 15)) }]);
    assert.equal(firstToken(turn2, "t2").cachedTokens, 1_200);
  });

  it("a full hit still computes one token and caps cached tokens at the input", () => {
    const engine = new EngineModel("e", BASE);
    run(engine, [{ time: 0, request: request("a", 1_000, 2, keys(1, 10)) }]);
    const again = run(engine, [{ time: 10_000, request: request("b", 950, 2, keys(1, 10)) }]);
    const first = firstToken(again, "b");
    assert.equal(first.cachedTokens, 950);
    assert.ok(first.time > 10_000);
  });

  it("evicts the least recently used prefix blocks at capacity", () => {
    const engine = new EngineModel("e", { ...BASE, prefixCacheBlocks: 20 });
    run(engine, [{ time: 0, request: request("a", 1_000, 2, keys(100, 10)) }]);
    run(engine, [{ time: 1_000, request: request("b", 1_000, 2, keys(200, 10)) }]);
    assert.equal(engine.cachedPrefixBlocks(keys(100, 10)), 10);
    // A third chain pushes the least recently used one (a) out; b stays.
    run(engine, [{ time: 2_000, request: request("c", 1_000, 2, keys(300, 10)) }]);
    assert.equal(engine.load().cachedBlocks, 20);
    assert.equal(engine.cachedPrefixBlocks(keys(100, 10)), 0);
    assert.equal(engine.cachedPrefixBlocks(keys(200, 10)), 10);
    assert.equal(engine.cachedPrefixBlocks(keys(300, 10)), 10);
    const reused = run(engine, [{ time: 3_000, request: request("a2", 1_000, 2, keys(100, 10)) }]);
    assert.equal(firstToken(reused, "a2").cachedTokens, 0);
  });

  it("PrefixCache evicts leaves before the prefixes they extend", () => {
    const cache = new PrefixCache(4);
    cache.touchChain([1, 2, 3]);
    cache.touchChain([1, 2, 3, 4, 5]);
    assert.equal(cache.size, 4);
    assert.equal(cache.matchPrefix([1, 2, 3, 4, 5]), 4);
    cache.touchChain([9]);
    assert.equal(cache.matchPrefix([1, 2, 3, 4]), 3);
    assert.equal(cache.evictions, 2);
    cache.clear();
    assert.equal(cache.matchPrefix([1]), 0);
  });

  it("requests wait when the KV capacity is exhausted", () => {
    const engine = new EngineModel("e", { ...BASE, kvCapacityTokens: 5_000 });
    engine.submit(request("a", 3_000, 50), 0);
    engine.submit(request("b", 3_000, 50), 0);
    engine.advance(1);
    assert.deepEqual([engine.load().running, engine.load().waiting], [1, 1]);
    assert.ok(engine.load().usedTokens > 0 && engine.load().usedTokens <= 5_000);
    const events = run(engine, []);
    assert.ok(firstToken(events, "b").time >= done(events, "a").time, "b starts only after a frees its KV");
    assert.equal(engine.load().usedTokens, 0);
  });

  it("requests wait when all running slots are taken", () => {
    const engine = new EngineModel("e", { ...BASE, maxRunning: 2 });
    const events = run(
      engine,
      [0, 1, 2].map((i) => ({ time: 0, request: request(`r${i}`, 500, 20) })),
    );
    const firstDone = Math.min(done(events, "r0").time, done(events, "r1").time);
    assert.ok(firstToken(events, "r2").time > firstDone);
  });

  it("ITL grows with batch size", () => {
    const alone = done(run(new EngineModel("e", BASE), [{ time: 0, request: request("x", 200, 100) }]), "x");
    const crowd = run(
      new EngineModel("e", BASE),
      Array.from({ length: 40 }, (_, i) => ({ time: 0, request: request(i === 0 ? "x" : `o${i}`, 200, 100) })),
    );
    const batched = done(crowd, "x");
    assert.ok(alone.meanItlMs >= BASE.itlBaseMs);
    assert.ok(batched.meanItlMs > alone.meanItlMs + 5, `batched ${batched.meanItlMs} vs alone ${alone.meanItlMs}`);
  });

  it("ITL grows with KV in use", () => {
    const short = done(run(new EngineModel("e", BASE), [{ time: 0, request: request("x", 100, 50) }]), "x");
    const long = done(run(new EngineModel("e", BASE), [{ time: 0, request: request("x", 200_000, 50) }]), "x");
    assert.ok(long.meanItlMs > short.meanItlMs + 5, `long ${long.meanItlMs} vs short ${short.meanItlMs}`);
  });

  it("generates exactly the requested tokens, capped by maxOutputTokens", () => {
    const events = run(new EngineModel("e", { ...BASE, emitTokenEvents: true, maxOutputTokens: 10 }), [
      { time: 0, request: request("a", 100, 5) },
      { time: 0, request: request("b", 100, 50) },
      { time: 0, request: request("c", 100, 1) },
    ]);
    const count = (id: string): number => events.reduce((n, e) => n + (e.id !== id ? 0 : e.type === "first-token" ? 1 : e.type === "tokens" ? e.count : 0), 0);
    assert.deepEqual([count("a"), count("b"), count("c")], [5, 10, 1]);
    assert.deepEqual([done(events, "a").outputTokens, done(events, "b").outputTokens, done(events, "c").outputTokens], [5, 10, 1]);
    const times = events.map((e) => e.time);
    assert.deepEqual(
      times,
      [...times].sort((x, y) => x - y),
      "events come in time order",
    );
  });

  it("cancel frees the slot and the KV at once", () => {
    const engine = new EngineModel("e", { ...BASE, maxRunning: 1 });
    engine.submit(request("a", 500, 100), 0);
    engine.submit(request("b", 500, 10), 0);
    engine.advance(100);
    assert.deepEqual([engine.load().running, engine.load().waiting], [1, 1]);
    engine.cancel("a", 100);
    const events = run(engine, []);
    assert.ok(!events.some((e) => e.id === "a" && e.type === "done"));
    assert.ok(firstToken(events, "b").time < 300);
    assert.equal(engine.load().requestsCancelled, 1);
    assert.equal(engine.load().usedTokens, 0);
    engine.cancel("b", 1_000); // already finished: ignored
    engine.cancel("nope", 1_000);
  });

  it("rejects duplicate ids and invalid params", () => {
    const engine = new EngineModel("e", BASE);
    engine.submit(request("a", 10), 0);
    assert.throws(() => engine.submit(request("a", 10), 0), /duplicate/);
    assert.throws(() => new EngineModel("e", { ...BASE, maxRunning: 0 }), RangeError);
    assert.throws(() => new EngineModel("e", { ...BASE, prefillTokensPerSec: 0 }), RangeError);
  });

  it("is deterministic", () => {
    const first = run(new EngineModel("e", BASE), workload(500, 7));
    const second = run(new EngineModel("e", BASE), workload(500, 7));
    assert.equal(first.length, 1_000);
    assert.deepEqual(second, first);
  });

  it("skipping decode-only steps gives the same timings as stepping token by token", () => {
    const arrivals = workload(400, 11);
    const skipped = run(new EngineModel("e", BASE), arrivals).filter((e) => e.type !== "tokens");
    const stepped = run(new EngineModel("e", { ...BASE, emitTokenEvents: true }), arrivals).filter((e) => e.type !== "tokens");
    assert.equal(skipped.length, stepped.length);
    const byKey = new Map(stepped.map((e) => [`${e.type}:${e.id}`, e]));
    for (const event of skipped) {
      const twin = byKey.get(`${event.type}:${event.id}`);
      assert.ok(twin, `${event.type} ${event.id}`);
      assert.ok(Math.abs(twin.time - event.time) < 1e-6, `${event.type} ${event.id}: ${event.time} vs ${twin.time}`);
    }
  });

  it("advance() in small increments matches advancing straight to each event", () => {
    const arrivals = workload(100, 3);
    const direct = run(new EngineModel("e", BASE), arrivals);
    const engine = new EngineModel("e", BASE);
    const chopped: EngineEvent[] = [];
    let next = 0;
    for (let now = 0; next < arrivals.length || engine.nextEventTime() !== Number.POSITIVE_INFINITY; now += 0.75) {
      while (next < arrivals.length && arrivals[next]!.time <= now) {
        engine.submit(arrivals[next]!.request, arrivals[next]!.time);
        next++;
      }
      chopped.push(...engine.advance(now));
    }
    assert.equal(chopped.length, direct.length);
    const times = new Map(direct.map((e) => [`${e.type}:${e.id}`, e.time]));
    for (const event of chopped) {
      const time = times.get(`${event.type}:${event.id}`);
      assert.ok(time !== undefined && Math.abs(time - event.time) < 1e-6, `${event.type} ${event.id}`);
    }
  });

  it("reports load and counters", () => {
    const engine = new EngineModel("e", PAPER_ENGINE_PARAMS);
    engine.submit(request("a", 4_000, 128, keys(1, 8)), 0);
    engine.advance(0);
    const load = engine.load();
    assert.equal(load.running, 1);
    assert.equal(load.admittedConcurrency, 64);
    assert.equal(load.kvCapacityTokens, PAPER_ENGINE_PARAMS.kvCapacityTokens);
    run(engine, []);
    const after = engine.load();
    assert.equal(after.generationTokensTotal, 128);
    assert.equal(after.promptTokensTotal, 4_000);
    assert.equal(after.requestsFinished, 1);
    engine.flushCache();
    assert.equal(engine.load().cachedBlocks, 0);
  });
});
