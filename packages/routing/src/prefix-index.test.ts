import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RoutingInputError } from "./errors";
import { traceBlockKeys } from "./keys";
import { PrefixIndex } from "./prefix-index";
import { createRng } from "./rng";

const chain = (root: number, n: number) => traceBlockKeys(Array.from({ length: n }, (_, i) => root * 10_000 + i));

describe("PrefixIndex match", () => {
  it("returns the matched depth for every replica and the maximum", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const convo = chain(1, 20);
    index.learn(convo.slice(0, 12), "a", "LOCAL", 0);
    index.learn(convo.slice(0, 5), "b", "LOCAL", 0);
    const m = index.match(convo, 1);
    assert.equal(m.maxDepth, 12);
    assert.equal(m.depthByReplica.get("a"), 12);
    assert.equal(m.depthByReplica.get("b"), 5);
    assert.equal(m.depthByReplica.has("c"), false);
  });

  it("with candidate ids, reports only those (0 when cold) and ignores other replicas", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const convo = chain(2, 10);
    index.learn(convo, "a", "LOCAL", 0);
    index.learn(convo.slice(0, 3), "b", "LOCAL", 0);
    const m = index.match(convo, 1, ["b", "c"]);
    assert.deepEqual([...m.depthByReplica.entries()].sort(), [
      ["b", 3],
      ["c", 0],
    ]);
    assert.equal(m.maxDepth, 3);
    assert.equal(index.match(convo, 1, ["nobody"]).maxDepth, 0);
  });

  it("matches a branched or truncated conversation at its deepest shared block", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const ids = Array.from({ length: 30 }, (_, i) => 500 + i);
    index.learn(traceBlockKeys(ids), "warm", "LOCAL", 0);
    const branched = traceBlockKeys([...ids.slice(0, 17), 99_999, 99_998]);
    assert.equal(index.match(branched, 1).depthByReplica.get("warm"), 17);
    const unrelated = traceBlockKeys([1, 2, 3]);
    assert.equal(index.match(unrelated, 1).maxDepth, 0);
    assert.equal(index.match([], 1).maxDepth, 0);
  });

  it("counts lookups and hits", () => {
    const index = new PrefixIndex({ capacityBlocks: 100 });
    index.learn(chain(3, 4), "a", "LOCAL", 0);
    index.match(chain(3, 4), 1);
    index.match(chain(4, 4), 1);
    const s = index.stats();
    assert.equal(s.lookups, 2);
    assert.equal(s.hits, 1);
    assert.equal(s.matchedBlocks, 4);
  });
});

describe("PrefixIndex bounds", () => {
  it("evicts least recently learned routes first, deep blocks of an idle conversation before its root", () => {
    const index = new PrefixIndex({ capacityBlocks: 6 });
    const a = chain(10, 3);
    const b = chain(11, 3);
    index.learn(a, "r1", "LOCAL", 1);
    index.learn(b, "r1", "LOCAL", 2);
    index.learn(chain(12, 1), "r1", "LOCAL", 3); // needs one slot: A is least recent
    assert.equal(index.match(a, 4).maxDepth, 2, "A lost its deepest block only");
    assert.equal(index.match(b, 4).maxDepth, 3);
    assert.equal(index.stats().evictions, 1);
    assert.equal(index.stats().routes, 6);
  });

  it("re-learning refreshes recency, so the other conversation is evicted instead", () => {
    const index = new PrefixIndex({ capacityBlocks: 6 });
    const a = chain(20, 3);
    const b = chain(21, 3);
    index.learn(a, "r1", "LOCAL", 1);
    index.learn(b, "r1", "LOCAL", 2);
    index.learn(a, "r1", "LOCAL", 3);
    index.learn(chain(22, 2), "r1", "LOCAL", 4);
    assert.equal(index.match(a, 5).maxDepth, 3);
    assert.equal(index.match(b, 5).maxDepth, 1);
  });

  it("expires routes after the TTL measured from the time learned", () => {
    const index = new PrefixIndex({ capacityBlocks: 100, ttlMs: 1000 });
    const a = chain(30, 4);
    index.learn(a, "r1", "LOCAL", 0);
    assert.equal(index.match(a, 999).maxDepth, 4);
    assert.equal(index.match(a, 1000).maxDepth, 0, "expired exactly at learnedAt + ttl");
    index.learn(chain(31, 1), "r2", "LOCAL", 1500); // learning sweeps expired tails
    assert.equal(index.stats().expirations, 4);
    assert.equal(index.stats().routes, 1);
    index.learn(a, "r1", "LOCAL", 2000);
    assert.equal(index.match(a, 2999).maxDepth, 4, "re-learning restarts the TTL");
  });

  it("evicts REMOTE routes before LOCAL ones, even more recent REMOTE ones", () => {
    const index = new PrefixIndex({ capacityBlocks: 4 });
    const local = chain(40, 2);
    const remote = chain(41, 2);
    index.learn(local, "r1", "LOCAL", 1);
    index.learnSnapshot("peer-eu", remote, 2);
    index.learn(chain(42, 1), "r1", "LOCAL", 3);
    assert.equal(index.match(local, 4).maxDepth, 2, "LOCAL survives");
    assert.equal(index.match(remote, 4).depthByReplica.get("peer-eu"), 1, "REMOTE lost its deepest block");
    index.learn(chain(43, 1), "r1", "LOCAL", 5);
    assert.equal(index.match(remote, 6).maxDepth, 0);
    assert.equal(index.stats().remoteRoutes, 0);
    assert.equal(index.stats().localRoutes, 4);
    // Only when no REMOTE route is left does LOCAL go, oldest first.
    index.learn(chain(44, 1), "r1", "LOCAL", 7);
    assert.equal(index.match(local, 8).maxDepth, 1);
  });

  it("never downgrades a LOCAL route to REMOTE, and upgrades REMOTE to LOCAL", () => {
    const index = new PrefixIndex({ capacityBlocks: 10 });
    const keys = chain(50, 2);
    index.learn(keys, "x", "LOCAL", 1);
    index.learn(keys, "x", "REMOTE", 2);
    assert.deepEqual(
      index.routesOf(keys[0]!).map((r) => r.trust),
      ["LOCAL"],
    );
    index.learn(chain(51, 1), "y", "REMOTE", 3);
    index.learn(chain(51, 1), "y", "LOCAL", 4);
    assert.equal(index.stats().remoteRoutes, 0);
    assert.equal(index.stats().localRoutes, 3);
  });

  it("counts capacity in (block, replica) routes and holds it under 1M inserts of any shape", () => {
    const capacity = 50_000;
    const index = new PrefixIndex({ capacityBlocks: capacity });
    const replicas = Array.from({ length: 1000 }, (_, r) => `r${r}`); // many more ids than fit per block
    const batch = [0];
    let state = 7;
    for (let i = 0; i < 1_000_000; i++) {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0; // cheap LCG: the test times the index, not an rng
      batch[0] = state * 1024 + (i & 1023);
      index.learn(batch, replicas[state % 1000]!, i % 3 === 0 ? "REMOTE" : "LOCAL", i);
      if (i % 100_000 === 0) {
        const s = index.stats();
        assert.ok(s.routes <= capacity && s.blocks <= s.routes && s.replicas <= s.routes);
      }
    }
    const s = index.stats();
    assert.equal(s.routes, capacity);
    assert.ok(s.replicas <= capacity);
    assert.equal(s.evictions, 1_000_000 - capacity);
  });

  it("bounds the replicas listed on one block (oldest learned gives way)", () => {
    const index = new PrefixIndex({ capacityBlocks: 10_000, maxReplicasPerBlock: 8 });
    const shared = chain(60, 1);
    for (let r = 0; r < 5000; r++) index.learn(shared, `shared-${r}`, "LOCAL", r);
    const routes = index.routesOf(shared[0]!);
    assert.equal(routes.length, 8);
    assert.deepEqual(routes.map((x) => x.replicaId).sort(), Array.from({ length: 8 }, (_, i) => `shared-${4992 + i}`).sort());
    assert.equal(index.stats().routes, 8);
    assert.equal(index.stats().replicas, 8);
    assert.throws(() => new PrefixIndex({ capacityBlocks: 10, maxReplicasPerBlock: 0 }), /maxReplicasPerBlock/);
  });

  it("a route learned again is the newest on its block: the one learned longest ago gives way", () => {
    const index = new PrefixIndex({ capacityBlocks: 100, maxReplicasPerBlock: 2 });
    index.learn([11], "r1", "LOCAL", 1);
    index.learn([11], "r2", "LOCAL", 2);
    index.learn([11], "r1", "LOCAL", 3);
    index.learn([11], "r3", "LOCAL", 4);
    assert.deepEqual(
      index
        .routesOf(11)
        .map((x) => [x.replicaId, x.learnedAt])
        .sort(),
      [
        ["r1", 3],
        ["r3", 4],
      ],
    );
  });

  it("the per-block cap leaves no hole in a replica's chain: match() counts no block past the evicted one", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000, maxReplicasPerBlock: 2 });
    const [a, b, c] = [11, 22, 33];
    index.learn([a, b, c], "r1", "LOCAL", 1);
    index.learn([a, b], "r2", "LOCAL", 2);
    index.learn([a], "r1", "LOCAL", 3); // r1 served a prompt sharing only the first block
    index.learn([a, b], "r3", "LOCAL", 4); // block b is full: r1's b (t=1) goes; then block a: r2's a (t=2)
    assert.equal(
      index.routesOf(b).some((x) => x.replicaId === "r1"),
      false,
    );
    assert.equal(index.match([a, b, c], 5, ["r1"]).depthByReplica.get("r1"), 1, "r1 credited with blocks past the missing block b");
    assert.deepEqual(index.holdingProfile([a, b, c], "r1", 5), { depth: 1, runs: [{ end: 1, learnedAt: 3 }] });
    assert.deepEqual(
      [c, b].map((k) => index.routesOf(k).map((x) => x.replicaId)),
      [[], ["r3"]],
      "r1's c and r2's b (past their evicted blocks) are gone",
    );
    assert.equal(index.match([a, b], 5).depthByReplica.get("r3"), 2);
  });
});

describe("PrefixIndex maintenance", () => {
  it("removeReplica drops only that replica's routes", () => {
    const index = new PrefixIndex({ capacityBlocks: 100 });
    const keys = chain(70, 5);
    index.learn(keys, "a", "LOCAL", 0);
    index.learn(keys, "b", "LOCAL", 0);
    assert.equal(index.removeReplica("a"), 5);
    assert.deepEqual([...index.match(keys, 1).depthByReplica.keys()], ["b"]);
    assert.equal(index.removeReplica("never-seen"), 0);
    assert.equal(index.stats().replicas, 1);
  });

  it("forget trims a replica back to what it actually served", () => {
    const index = new PrefixIndex({ capacityBlocks: 100 });
    const keys = chain(71, 8);
    index.learn(keys, "a", "LOCAL", 0);
    assert.equal(index.forget(keys, "a", 3), 5);
    assert.equal(index.match(keys, 1).maxDepth, 3);
  });

  it("clear empties everything including counters", () => {
    const index = new PrefixIndex({ capacityBlocks: 100 });
    index.learn(chain(72, 3), "a", "LOCAL", 0);
    index.match(chain(72, 3), 0);
    index.clear();
    const s = index.stats();
    assert.deepEqual([s.routes, s.blocks, s.replicas, s.lookups, s.hits], [0, 0, 0, 0, 0]);
    assert.equal(index.match(chain(72, 3), 0).maxDepth, 0);
  });

  it("exports a LOCAL snapshot (most recent first) that a peer stores as REMOTE under our id", () => {
    const here = new PrefixIndex({ capacityBlocks: 100 });
    const old = chain(80, 3);
    const recent = chain(81, 3);
    here.learn(old, "r1", "LOCAL", 1);
    here.learn(recent, "r2", "LOCAL", 2);
    here.learn(recent, "r3", "LOCAL", 2); // same blocks on two replicas: listed once
    here.learnSnapshot("someone-else", chain(82, 2), 3); // REMOTE routes are not re-exported
    const snap = here.snapshot();
    assert.equal(snap.length, 6);
    assert.deepEqual(snap.slice(0, 3), recent);
    assert.deepEqual(here.snapshot(2), recent.slice(0, 2));
    assert.deepEqual(JSON.parse(JSON.stringify(snap)), snap);

    const peer = new PrefixIndex({ capacityBlocks: 100 });
    peer.learnSnapshot("lb-us", snap, 10);
    const m = peer.match(recent, 11);
    assert.equal(m.depthByReplica.get("lb-us"), 3);
    assert.ok(peer.routesOf(recent[0]!).every((r) => r.trust === "REMOTE"));
  });

  it("a peer that stops reporting a conversation in complete snapshots is no longer matched for it", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000, ttlMs: 3_600_000 });
    const gone = chain(83, 4);
    const kept = chain(84, 2);
    index.learnSnapshot("peer-far", [...gone, ...kept], 0);
    assert.equal(index.match(gone, 0).depthByReplica.get("peer-far"), 4);
    index.learnSnapshot("peer-far", kept, 1_000); // the peer's whole belief now, long before the TTL
    assert.equal(index.match(gone, 1_000).maxDepth, 0, "the dropped conversation is forgotten at once");
    assert.equal(index.match(kept, 1_000).depthByReplica.get("peer-far"), 2);
    index.learnSnapshot("peer-near", gone, 1_000);
    index.learnSnapshot("peer-far", [], 2_000); // a complete, empty snapshot: it holds nothing
    assert.equal(index.replicaView("peer-far").routes, 0);
    assert.equal(index.match(gone, 2_000).depthByReplica.get("peer-near"), 4, "another peer's routes are untouched");
  });

  it("a truncated snapshot adds to what the peer reported before: the missing keys may just be below its cut", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000, ttlMs: 10_000 });
    const older = chain(85, 3);
    const newer = chain(86, 3);
    index.learnSnapshot("peer", older, 0, true);
    index.learnSnapshot("peer", newer, 1_000, true);
    assert.equal(index.match(older, 1_000).depthByReplica.get("peer"), 3);
    assert.equal(index.match(newer, 1_000).depthByReplica.get("peer"), 3);
    assert.equal(index.match(older, 10_000).maxDepth, 0, "until a TTL after the last report that carried them");
    assert.equal(index.match(newer, 10_000).depthByReplica.get("peer"), 3);
    assert.throws(() => index.learnSnapshot("peer", newer, 2_000, "yes" as unknown as boolean), /truncated/);
  });

  it("a snapshot leaves out routes its own match() hides behind the replica's horizon", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000, ttlMs: 3_600_000 });
    const stale = chain(87, 3);
    const fresh = chain(88, 2);
    const elsewhere = chain(89, 2);
    index.learn(stale, "r1", "LOCAL", 0);
    index.learn(elsewhere, "r2", "LOCAL", 0);
    index.learn(fresh, "r1", "LOCAL", 50_000);
    index.setReplicaHorizon("r1", 30_000); // r1's cache keeps about 30 s: the routes learned at 0 are hidden
    assert.equal(index.match(stale, 60_000).maxDepth, 0);
    const snap = index.snapshot(100, 60_000);
    assert.deepEqual(new Set(snap), new Set([...fresh, ...elsewhere]), "r2 has no horizon: its routes of the same age are shared");
    assert.equal(index.snapshot(100).length, 7, "without a clock, nothing is judged hidden");
    // The same key held by a replica that hides it and one that does not is still shared.
    index.learn(stale, "r2", "LOCAL", 0);
    assert.ok(index.snapshot(100, 60_000).includes(stale[2]!));
  });

  it("agrees with a plain Map model under random learn / forget / removeReplica", () => {
    const index = new PrefixIndex({ capacityBlocks: 1_000_000 });
    const model = new Map<number, Set<string>>();
    const rng = createRng(99);
    const replicas = ["a", "b", "c", "d"];
    const keyPool = Array.from({ length: 6000 }, (_, i) => Math.floor(i * 2654435761) % 2 ** 31);
    for (let step = 0; step < 40_000; step++) {
      const key = keyPool[Math.floor(rng.next() * keyPool.length)]!;
      const replica = replicas[Math.floor(rng.next() * replicas.length)]!;
      const op = rng.next();
      if (op < 0.6) {
        index.learn([key], replica, "LOCAL", 0);
        if (!model.has(key)) model.set(key, new Set());
        model.get(key)!.add(replica);
      } else if (op < 0.995) {
        index.forget([key], replica);
        model.get(key)?.delete(replica);
        if (model.get(key)?.size === 0) model.delete(key);
      } else {
        index.removeReplica(replica);
        for (const [k, set] of model) {
          set.delete(replica);
          if (set.size === 0) model.delete(k);
        }
      }
    }
    for (const key of keyPool) {
      const expected = [...(model.get(key) ?? [])].sort();
      assert.deepEqual(
        index
          .routesOf(key)
          .map((r) => r.replicaId)
          .sort(),
        expected,
        `key ${key}`,
      );
    }
    assert.equal(index.stats().blocks, model.size);
  });
});

describe("PrefixIndex input validation", () => {
  it("rejects bad construction options", () => {
    assert.throws(() => new PrefixIndex({ capacityBlocks: 0 }), /capacityBlocks/);
    assert.throws(() => new PrefixIndex({ capacityBlocks: 1.5 }), /capacityBlocks/);
    assert.throws(() => new PrefixIndex({ capacityBlocks: 10, ttlMs: -1 }), /ttlMs/);
    assert.throws(() => new PrefixIndex({ capacityBlocks: 10, ttlMs: Number.NaN }), /ttlMs/);
  });

  it("rejects bad keys, ids, trust and clocks with the field named", () => {
    const index = new PrefixIndex({ capacityBlocks: 10 });
    assert.throws(() => index.learn([1, Number.NaN], "a", "LOCAL", 0), /keys\[1\]/);
    assert.throws(() => index.learn([-1], "a", "LOCAL", 0), RoutingInputError);
    assert.throws(() => index.learn([2 ** 53], "a", "LOCAL", 0), /keys\[0\]/);
    assert.throws(() => index.learn([1], "", "LOCAL", 0), /replicaId/);
    assert.throws(() => index.learn([1], "a", "TRUSTED" as "LOCAL", 0), /trust/);
    assert.throws(() => index.learn([1], "a", "LOCAL", Number.NaN), /now/);
    assert.throws(() => index.match([1], Number.POSITIVE_INFINITY), /now/);
    assert.throws(() => index.match([0.5], 0), /keys\[0\]/);
    assert.throws(() => index.learnSnapshot("peer", [1, -3], 0), /snapshot\[1\]/);
    assert.equal(index.stats().routes, 0, "a rejected call stores nothing");
  });
});

describe("PrefixIndex per-replica budget and horizon", () => {
  it("a replica's budget evicts only that replica's least recently used routes", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    index.setReplicaBudget("small", 4);
    const a = chain(90, 3);
    const b = chain(91, 3);
    index.learn(a, "small", "LOCAL", 1);
    index.learn(a, "big", "LOCAL", 1);
    index.learn(b, "small", "LOCAL", 2); // needs 2 more slots on "small": A's two deepest blocks go
    assert.equal(index.match(a, 3).depthByReplica.get("small"), 1);
    assert.equal(index.match(b, 3).depthByReplica.get("small"), 3);
    assert.equal(index.match(a, 3).depthByReplica.get("big"), 3, "another replica is untouched");
    assert.deepEqual(index.replicaView("small"), { routes: 4, budget: 4, horizonMs: null, oldestLearnedAt: 1 });
    index.setReplicaBudget("small", 2); // lowering evicts at once
    assert.equal(index.replicaView("small").routes, 2);
    assert.equal(index.match(b, 3).depthByReplica.get("small"), 2);
    index.setReplicaBudget("small", 0);
    index.learn(a, "small", "LOCAL", 4);
    assert.equal(index.replicaView("small").routes, 0, "a zero budget learns nothing");
    index.setReplicaBudget("small", null);
    index.learn(a, "small", "LOCAL", 5);
    assert.equal(index.replicaView("small").routes, 3);
    assert.throws(() => index.setReplicaBudget("small", -1), /maxRoutes/);
  });

  it("a budget set before the replica has routes applies when it gets them, and survives removeReplica", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    index.setReplicaBudget("r", 2);
    index.learn(chain(92, 5), "r", "LOCAL", 1);
    assert.equal(index.replicaView("r").routes, 2);
    assert.equal(index.removeReplica("r"), 2);
    index.learn(chain(93, 5), "r", "LOCAL", 2);
    assert.equal(index.replicaView("r").routes, 2);
  });

  it("a horizon hides routes learned too long ago from match() but keeps them stored", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const old = chain(94, 4);
    const fresh = chain(95, 4);
    index.learn(old, "r", "LOCAL", 0);
    index.learn(fresh, "r", "LOCAL", 50_000);
    index.setReplicaHorizon("r", 30_000);
    assert.equal(index.match(old, 60_000).maxDepth, 0);
    assert.equal(index.match(fresh, 60_000).maxDepth, 4);
    assert.equal(index.match(fresh, 80_000).maxDepth, 0, "expired exactly at learnedAt + horizon");
    assert.equal(index.replicaView("r").routes, 8, "hidden routes stay stored");
    assert.equal(index.holdingProfile(old, "r", 60_000).depth, 4, "the profile ignores the horizon");
    index.setReplicaHorizon("r", null);
    assert.equal(index.match(old, 60_000).maxDepth, 4);
    assert.throws(() => index.setReplicaHorizon("r", Number.NaN), /horizonMs/);
  });

  it("holdingProfile reports the chain's learn times in runs, deepest oldest", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const convo = chain(96, 10);
    index.learn(convo.slice(0, 8), "r", "LOCAL", 100);
    index.learn(convo.slice(0, 5), "r", "LOCAL", 200);
    index.learn(convo.slice(0, 2), "r", "LOCAL", 300);
    assert.deepEqual(index.holdingProfile(convo, "r", 400), {
      depth: 8,
      runs: [
        { end: 2, learnedAt: 300 },
        { end: 5, learnedAt: 200 },
        { end: 8, learnedAt: 100 },
      ],
    });
    assert.deepEqual(index.holdingProfile(convo, "r", 400, 2).runs, [
      { end: 2, learnedAt: 300 },
      { end: 8, learnedAt: 100 },
    ]);
    assert.deepEqual(index.holdingProfile(convo, "nobody", 400), { depth: 0, runs: [] });
  });

  it("forget with learnedAtOrBefore keeps routes re-learned since", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const keys = chain(97, 6);
    index.learn(keys, "r", "LOCAL", 10);
    index.learn(keys.slice(0, 4), "r", "LOCAL", 20);
    assert.equal(index.forget(keys, "r", 2, 15), 2, "only blocks 4 and 5, learned at 10, go");
    assert.equal(index.match(keys, 21).maxDepth, 4);
  });
});
