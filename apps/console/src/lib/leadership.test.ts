import { strict as assert } from "node:assert";
import { test } from "node:test";
import { leadershipFromHealth, leadershipLabel } from "./leadership";

test("a healthy /api/health body gives the leadership (the route's shape: leader.self/url/term)", () => {
  assert.deepEqual(leadershipFromHealth({ ok: true, leader: { self: true, url: "http://c1:3000", term: 4 } }), {
    isLeader: true,
    leaderUrl: "http://c1:3000",
    term: 4,
  });
  assert.deepEqual(leadershipFromHealth({ ok: true, leader: { self: false, url: null, term: 0 }, startNonce: "n" }), {
    isLeader: false,
    leaderUrl: null,
    term: 0,
  });
});

test("an unhealthy or malformed body gives null, so the badge keeps what it shows", () => {
  for (const body of [
    null,
    "ok",
    { ok: false },
    { ok: true },
    { ok: true, leader: { self: "yes", url: null, term: 1 } },
    { ok: true, leader: { self: true, url: 3, term: 1 } },
    { ok: true, leader: { self: true, url: null, term: Number.NaN } },
  ]) {
    assert.equal(leadershipFromHealth(body), null, JSON.stringify(body));
  }
});

test("labels: this console, electing, follower with the leader's address", () => {
  assert.equal(leadershipLabel({ isLeader: true, leaderUrl: "http://c1:3000", term: 2 }), "Leader: this console");
  assert.equal(leadershipLabel({ isLeader: false, leaderUrl: null, term: 0 }), "Leader: electing…");
  assert.equal(leadershipLabel({ isLeader: false, leaderUrl: "http://c2:3000", term: 3 }), "Follower · leader http://c2:3000");
  assert.equal(leadershipLabel({ isLeader: false, leaderUrl: null, term: 3 }), "Follower · leader (address not set)");
});
