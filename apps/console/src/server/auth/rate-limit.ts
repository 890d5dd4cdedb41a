// Login throttling with exponential backoff, on three keys at once:
// - address + username: one client guessing one account (5 free failures);
// - username alone: many addresses guessing one account (10 free failures);
// - address alone: one client spraying many accounts (20 free failures).
// Once a key has used its free failures, each further failure blocks it for base·2^(n − free), up to
// a cap; a key with no failure for `forgetAfterMs` starts afresh. Only failures count, so an operator
// who logs in often (or a test suite) is never slowed down, and a success clears the account's keys
// (never the address's own key: logging in to one's own account must not reset a spray).
//
// The per-username key lets anyone delay one account's logins by failing on purpose; the cap
// (15 min by default) bounds that, and it is the usual price of stopping a distributed guesser.
// The address is the true client address (client-address.ts), never a client-supplied header.
import "server-only";

export interface BackoffRule {
  /** Failures allowed before the first block. */
  free: number;
  /** Length of the first block; each further failure doubles it. */
  baseBlockMs: number;
  maxBlockMs: number;
}

export interface LoginThrottleRules {
  addressAndUser: BackoffRule;
  user: BackoffRule;
  address: BackoffRule;
  /** A key with no failure for this long is forgotten. */
  forgetAfterMs: number;
  /** Bound on remembered keys per rule (a credential-stuffing flood must not grow memory without end). */
  maxKeys: number;
}

export const DEFAULT_LOGIN_RULES: LoginThrottleRules = {
  addressAndUser: { free: 5, baseBlockMs: 60_000, maxBlockMs: 15 * 60_000 },
  user: { free: 10, baseBlockMs: 60_000, maxBlockMs: 15 * 60_000 },
  address: { free: 20, baseBlockMs: 60_000, maxBlockMs: 15 * 60_000 },
  forgetAfterMs: 30 * 60_000,
  maxKeys: 10_000,
};

interface Counter {
  failures: number;
  lastFailureAt: number;
  blockedUntil: number;
}

class BackoffCounters {
  private readonly counters = new Map<string, Counter>();

  constructor(
    private readonly rule: BackoffRule,
    private readonly forgetAfterMs: number,
    private readonly maxKeys: number,
  ) {}

  private live(key: string, now: number): Counter | undefined {
    const counter = this.counters.get(key);
    if (counter && now - counter.lastFailureAt > this.forgetAfterMs && now >= counter.blockedUntil) {
      this.counters.delete(key);
      return undefined;
    }
    return counter;
  }

  blockedForMs(key: string, now: number): number {
    const counter = this.live(key, now);
    return counter ? Math.max(0, counter.blockedUntil - now) : 0;
  }

  fail(key: string, now: number): void {
    const counter = this.live(key, now) ?? { failures: 0, lastFailureAt: now, blockedUntil: 0 };
    counter.failures += 1;
    counter.lastFailureAt = now;
    const over = counter.failures - this.rule.free;
    if (over >= 0) counter.blockedUntil = now + Math.min(this.rule.maxBlockMs, this.rule.baseBlockMs * 2 ** Math.min(over, 30));
    // Re-inserting keeps the map in last-failure order, so the eviction below finds the stalest key.
    this.counters.delete(key);
    this.counters.set(key, counter);
    if (this.counters.size > this.maxKeys) this.evictOne();
  }

  /** The stalest key that has not used up its free failures; the stalest of all only when every key
   * has. A key past its free failures is what the throttle exists for: evicted first, it was reset
   * by failing with 10,000 throwaway usernames, and the blocked account's guesses came back. */
  private evictOne(): void {
    let victim: string | undefined;
    for (const [key, counter] of this.counters) {
      if (counter.failures < this.rule.free) {
        victim = key;
        break;
      }
    }
    victim ??= this.counters.keys().next().value;
    if (victim !== undefined) this.counters.delete(victim);
  }

  clear(key: string): void {
    this.counters.delete(key);
  }
}

export class LoginThrottle {
  private readonly byAddressAndUser: BackoffCounters;
  private readonly byUser: BackoffCounters;
  private readonly byAddress: BackoffCounters;
  /** Accounts with a password check in progress (begin/end). */
  private readonly checking = new Set<string>();

  constructor(rules: LoginThrottleRules = DEFAULT_LOGIN_RULES) {
    this.byAddressAndUser = new BackoffCounters(rules.addressAndUser, rules.forgetAfterMs, rules.maxKeys);
    this.byUser = new BackoffCounters(rules.user, rules.forgetAfterMs, rules.maxKeys);
    this.byAddress = new BackoffCounters(rules.address, rules.forgetAfterMs, rules.maxKeys);
  }

  private static keys(address: string, username: string) {
    const user = username.toLowerCase();
    return { pair: `${address}\u0000${user}`, user, address };
  }

  /** Whole seconds to wait before the next attempt may be checked, or 0 when it may be now. */
  retryAfter(address: string, username: string, now: number = Date.now()): number {
    const k = LoginThrottle.keys(address, username);
    const ms = Math.max(this.byAddressAndUser.blockedForMs(k.pair, now), this.byUser.blockedForMs(k.user, now), this.byAddress.blockedForMs(k.address, now));
    return ms > 0 ? Math.max(1, Math.ceil(ms / 1000)) : 0;
  }

  /**
   * Starts a password check of this account, or returns false while another check of it is still
   * running. Failures are counted when a check ends, so checks started together all passed
   * retryAfter: 50 parallel guesses at one account were all checked. One at a time, a burst gets one
   * check and 429s (retry after 1 s); a person logging in is not racing their own login. Pair with end().
   */
  begin(username: string): boolean {
    const key = LoginThrottle.keys("", username).user;
    if (this.checking.has(key)) return false;
    this.checking.add(key);
    return true;
  }

  end(username: string): void {
    this.checking.delete(LoginThrottle.keys("", username).user);
  }

  fail(address: string, username: string, now: number = Date.now()): void {
    const k = LoginThrottle.keys(address, username);
    this.byAddressAndUser.fail(k.pair, now);
    this.byUser.fail(k.user, now);
    this.byAddress.fail(k.address, now);
  }

  succeed(address: string, username: string): void {
    const k = LoginThrottle.keys(address, username);
    this.byAddressAndUser.clear(k.pair);
    this.byUser.clear(k.user);
  }
}
