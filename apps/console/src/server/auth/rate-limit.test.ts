import { strict as assert } from "node:assert";
import { test } from "node:test";
import { DEFAULT_LOGIN_RULES, LoginThrottle } from "./rate-limit";

const MIN = 60_000;

test("five failures of one address on one account block it for a minute, then each further failure doubles the block", () => {
  const throttle = new LoginThrottle();
  for (let i = 0; i < 4; i += 1) throttle.fail("10.0.0.1", "admin", i);
  assert.equal(throttle.retryAfter("10.0.0.1", "admin", 4), 0, "four failures are free");
  throttle.fail("10.0.0.1", "admin", 4);
  assert.equal(throttle.retryAfter("10.0.0.1", "admin", 4), 60);
  assert.equal(throttle.retryAfter("10.0.0.2", "admin", 4), 0, "another address may still try");
  assert.equal(throttle.retryAfter("10.0.0.1", "viewer", 4), 0, "another account may still be tried");
  throttle.fail("10.0.0.1", "admin", 4 + MIN);
  assert.equal(throttle.retryAfter("10.0.0.1", "admin", 4 + MIN), 120);
  throttle.fail("10.0.0.1", "admin", 4 + 3 * MIN);
  assert.equal(throttle.retryAfter("10.0.0.1", "admin", 4 + 3 * MIN), 240);
  let now = 4 + 7 * MIN;
  for (let i = 0; i < 10; i += 1, now += 15 * MIN) throttle.fail("10.0.0.1", "admin", now);
  assert.equal(throttle.retryAfter("10.0.0.1", "admin", now - 15 * MIN), 15 * 60, "capped at 15 minutes");
});

test("usernames compare case-insensitively; a success clears the account's keys but not the address's", () => {
  const throttle = new LoginThrottle();
  for (let i = 0; i < 5; i += 1) throttle.fail("10.0.0.1", "Admin", 0);
  assert.ok(throttle.retryAfter("10.0.0.1", "admin", 1) > 0);
  throttle.succeed("10.0.0.1", "admin");
  assert.equal(throttle.retryAfter("10.0.0.1", "admin", 1), 0);
  // A spray over 20 accounts blocks the address, and logging in to its own account does not reset that.
  for (let i = 0; i < 20; i += 1) throttle.fail("10.0.0.9", `user${i}`, 0);
  assert.equal(throttle.retryAfter("10.0.0.9", "someone-else", 1), 60);
  throttle.succeed("10.0.0.9", "user0");
  assert.equal(throttle.retryAfter("10.0.0.9", "someone-else", 1), 60);
});

test("many addresses on one account: the per-user key blocks after ten failures", () => {
  const throttle = new LoginThrottle();
  for (let i = 0; i < 9; i += 1) throttle.fail(`10.1.0.${i}`, "admin", 0);
  assert.equal(throttle.retryAfter("10.1.1.1", "admin", 1), 0);
  throttle.fail("10.1.0.9", "admin", 0);
  assert.equal(throttle.retryAfter("10.1.1.1", "admin", 1), 60, "a fresh address is blocked on that account too");
  assert.equal(throttle.retryAfter("10.1.1.1", "viewer", 1), 0);
});

test("a quiet key is forgotten, and memory stays bounded", () => {
  const throttle = new LoginThrottle({ ...DEFAULT_LOGIN_RULES, maxKeys: 100 });
  for (let i = 0; i < 5; i += 1) throttle.fail("10.0.0.1", "admin", 0);
  const later = DEFAULT_LOGIN_RULES.forgetAfterMs + 1;
  assert.equal(throttle.retryAfter("10.0.0.1", "admin", later), 0);
  throttle.fail("10.0.0.1", "admin", later);
  assert.equal(throttle.retryAfter("10.0.0.1", "admin", later), 0, "counting starts afresh");
  // 1,000 distinct (address, user) keys: the oldest are dropped, nothing throws.
  for (let i = 0; i < 1_000; i += 1) throttle.fail(`10.2.${i >> 8}.${i & 255}`, `u${i}`, later);
  assert.equal(throttle.retryAfter("10.2.3.231", "u999", later), 0);
});

test("a blocked account stays blocked when a flood of throwaway usernames fills the key bound", () => {
  const throttle = new LoginThrottle({ ...DEFAULT_LOGIN_RULES, maxKeys: 100 });
  const addr = (i: number) => `2001:db8::${i.toString(16)}`;
  // Ten guesses at admin from ten addresses: the per-user rule blocks admin.
  for (let i = 0; i < 10; i++) throttle.fail(addr(i), "admin", 1_000 + i);
  assert.ok(throttle.retryAfter(addr(99), "admin", 2_000) > 0);
  // 500 throwaway usernames, each failing once, would evict the stalest key: admin's, before.
  for (let u = 0; u < 500; u++) throttle.fail(addr(1_000 + u), `x${u}`, 2_000);
  assert.ok(throttle.retryAfter(addr(5_000), "admin", 2_000) > 0, "admin's block was forgotten");
});

test("one password check per account at a time: a parallel burst gets one", () => {
  const throttle = new LoginThrottle();
  assert.equal(throttle.begin("admin"), true);
  assert.equal(throttle.begin("ADMIN"), false, "the same account, another case");
  assert.equal(throttle.begin("viewer"), true, "another account is not held up");
  throttle.end("admin");
  assert.equal(throttle.begin("admin"), true);
});
