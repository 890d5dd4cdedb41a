// Login throttling: at most `limit` failed attempts per (IP, username) in a sliding window. Only
// failures count, so an operator who logs in many times (or a test suite) is never locked out; a
// success clears the key.
import "server-only";

export class LoginRateLimiter {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly limit = 5,
    private readonly windowMs = 60_000,
  ) {}

  private key(ip: string, username: string): string {
    return `${ip}\u0000${username.toLowerCase()}`;
  }

  private recent(key: string, now: number): number[] {
    const list = (this.failures.get(key) ?? []).filter((t) => t > now - this.windowMs);
    if (list.length === 0) this.failures.delete(key);
    else this.failures.set(key, list);
    return list;
  }

  /** Seconds to wait before the next attempt, or 0 when allowed. */
  retryAfter(ip: string, username: string, now: number = Date.now()): number {
    const list = this.recent(this.key(ip, username), now);
    if (list.length < this.limit) return 0;
    return Math.max(1, Math.ceil((list[0]! + this.windowMs - now) / 1000));
  }

  fail(ip: string, username: string, now: number = Date.now()): void {
    const key = this.key(ip, username);
    const list = this.recent(key, now);
    list.push(now);
    this.failures.set(key, list);
    // Bound memory under a credential-stuffing flood.
    if (this.failures.size > 10_000) {
      const oldest = this.failures.keys().next().value;
      if (oldest !== undefined) this.failures.delete(oldest);
    }
  }

  succeed(ip: string, username: string): void {
    this.failures.delete(this.key(ip, username));
  }
}
