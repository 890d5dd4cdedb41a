// One timer for the LB's whole hold queue, at its head's expiry: the balancer re-arms it after every
// drain (the head may have changed) and clears it on close. Times are the LB core's clock.
export class HeadExpiryTimer {
  private timer: NodeJS.Timeout | null = null;
  private at: number | null = null;

  /** Calls `onExpire` at `at`, or never when null; asked again for the same `at`, keeps the timer. */
  arm(at: number | null, now: number, onExpire: () => void): void {
    if (at === this.at) return;
    this.clear();
    this.at = at;
    if (at === null) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.at = null;
        onExpire();
      },
      Math.max(1, at - now),
    );
  }

  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.at = null;
  }
}
