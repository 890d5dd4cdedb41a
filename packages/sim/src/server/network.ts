// Network emulation: one engine process stands in for a replica in any region. A caller names its
// region in `x-meridian-src-region`; the engine holds the request for half the configured RTT before
// it reaches the model, and sends every response byte half the RTT late (a one-way delay, so the
// first token and every later one arrive as they would across that link).
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";

export type RttMatrix = Readonly<Record<string, Readonly<Record<string, number>>>>;

export const SRC_REGION_HEADER = "x-meridian-src-region";

/** RTT in ms between `src` and `own`, looked up both ways; 0 without a header or an entry. */
export function emulatedRttMs(matrix: RttMatrix | undefined, src: string | undefined, own: string): number {
  if (matrix === undefined || src === undefined || src === "") return 0;
  const rtt = matrix[src]?.[own] ?? matrix[own]?.[src] ?? 0;
  return Number.isFinite(rtt) && rtt > 0 ? rtt : 0;
}

export function sourceRegion(req: IncomingMessage): string | undefined {
  const value = req.headers[SRC_REGION_HEADER];
  return Array.isArray(value) ? value[0] : value;
}

export function sleep(ms: number): Promise<void> {
  return ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A response whose every operation reaches the wire `delayMs` after it is made. Timers of equal
 * duration fire in creation order, so the byte order is kept.
 */
export class DelayedResponse {
  constructor(
    readonly res: ServerResponse,
    private readonly delayMs: number,
  ) {}

  get headersSent(): boolean {
    return this.res.headersSent || this.headPending;
  }

  private headPending = false;

  writeHead(status: number, headers: OutgoingHttpHeaders): void {
    this.headPending = true;
    this.later(() => {
      if (!this.res.headersSent) this.res.writeHead(status, headers);
    });
  }

  write(chunk: string): void {
    this.later(() => {
      this.res.write(chunk);
    });
  }

  end(chunk?: string): void {
    this.later(() => {
      if (chunk === undefined) this.res.end();
      else this.res.end(chunk);
    });
  }

  /** A complete JSON response. */
  json(status: number, body: unknown, headers: OutgoingHttpHeaders = {}): void {
    const text = JSON.stringify(body);
    this.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
    this.end(text);
  }

  private later(action: () => void): void {
    const run = (): void => {
      if (this.res.destroyed || this.res.writableEnded) return;
      action();
    };
    if (this.delayMs <= 0) run();
    else setTimeout(run, this.delayMs);
  }
}
