// How many password checks the console runs at once. Each scrypt takes ~40 ms of a libuv thread
// pool thread (4 by default, shared with fs and dns.lookup, which LB probes to host names use), and
// the login throttle lets each new address and username start afresh: unbounded, a flood of
// anonymous logins would hold every pool thread. So at most `running` checks run, up to `waiting`
// more queue in arrival order, and beyond that a login is refused at once (429, retry in 1 s)
// without any hashing. A queue rather than an immediate refusal: several operators (or e2e workers)
// logging in in the same instant must all get in.
import "server-only";

export class PasswordCheckGate {
  private active = 0;
  private readonly queue: (() => void)[] = [];

  constructor(
    private readonly running = 2,
    private readonly waiting = 32,
  ) {}

  /** Runs `check` when a slot is free; resolves to null, without running it, when the queue is full. */
  async run<T>(check: () => Promise<T>): Promise<T | null> {
    if (this.active >= this.running) {
      if (this.queue.length >= this.waiting) return null;
      await new Promise<void>((resolve) => this.queue.push(resolve));
    } else {
      this.active += 1;
    }
    try {
      return await check();
    } finally {
      // The slot passes straight to the next in line (active stays the same), or is freed.
      const next = this.queue.shift();
      if (next) next();
      else this.active -= 1;
    }
  }
}

const KEY = Symbol.for("meridian.console.password-check-gate");

/** One gate per process (it must survive module re-evaluation, like the login throttle). */
export function passwordCheckGate(): PasswordCheckGate {
  const holder = globalThis as { [KEY]?: PasswordCheckGate };
  holder[KEY] ??= new PasswordCheckGate();
  return holder[KEY];
}
