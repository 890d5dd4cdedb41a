// A wake-up flag a background loop sleeps on: wait(ms) resolves after ms or as soon as wake() is
// called, whichever is first. A wake() while nobody waits is remembered for the next wait().
import "server-only";

export class WakeSignal {
  private pending = false;
  private resolve: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;

  wake(): void {
    if (this.resolve) this.finish();
    else this.pending = true;
  }

  wait(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.resolve = resolve;
      this.timer = setTimeout(() => this.finish(), ms);
      this.timer.unref?.();
    });
  }

  private finish(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const resolve = this.resolve;
    this.resolve = null;
    resolve?.();
  }
}

/** Exponential backoff with ±20 % jitter: base·2^attempt, capped. */
export function backoffMs(attempt: number, baseMs: number, capMs: number): number {
  const raw = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 20));
  return Math.round(raw * (0.8 + Math.random() * 0.4));
}
