import { strict as assert } from "node:assert";
import { test } from "node:test";
import { DEFAULT_LEASE_TIMING, decideLease, leadsUntil, validateTiming } from "./lease";

const timing = { ttlMs: 6_000, renewEveryMs: 1_500 };
const free = { holder: "", holderUrl: null, term: 0, expiresAt: 0 };

test("a free lease is taken with the next term; the holder renews it under the same term", () => {
  assert.deepEqual(decideLease(free, "a", 1_000, timing), { kind: "acquire", term: 1, expiresAt: 7_000 });
  const held = { holder: "a", holderUrl: "http://a", term: 1, expiresAt: 7_000 };
  assert.deepEqual(decideLease(held, "a", 2_500, timing), { kind: "renew", term: 1, expiresAt: 8_500 });
});

test("another console follows an unexpired lease and takes it, with a higher term, once it expired", () => {
  const held = { holder: "a", holderUrl: "http://a", term: 4, expiresAt: 7_000 };
  assert.deepEqual(decideLease(held, "b", 6_999, timing), { kind: "follow", leader: "a", leaderUrl: "http://a", term: 4, expiresAt: 7_000 });
  assert.deepEqual(decideLease(held, "b", 7_000, timing), { kind: "acquire", term: 5, expiresAt: 13_000 });
});

test("a holder whose own lease lapsed takes it back under a new term (its old writes are fenced)", () => {
  const lapsed = { holder: "a", holderUrl: null, term: 2, expiresAt: 5_000 };
  assert.equal(decideLease(lapsed, "a", 5_001, timing).kind, "acquire");
  assert.equal(decideLease(lapsed, "a", 5_001, timing).term, 3);
});

test("a leader stops acting one renewal interval before its lease could be taken", () => {
  assert.equal(leadsUntil(10_000, timing), 14_500);
  // Killed right after renewing at t: a follower that looks every renewEvery takes over by t + ttl + renewEvery.
  assert.ok(DEFAULT_LEASE_TIMING.ttlMs + DEFAULT_LEASE_TIMING.renewEveryMs <= 10_000);
});

test("timings that leave the leader fewer than three renewals per lease are refused", () => {
  assert.throws(() => validateTiming({ ttlMs: 2_000, renewEveryMs: 1_000 }), /at least 3×/);
  assert.throws(() => validateTiming({ ttlMs: 2_000, renewEveryMs: 0 }), /at least 3×/);
  assert.deepEqual(validateTiming(timing), timing);
});
