// Drives an EngineModel on real time: the model's clock is milliseconds since the driver started, and
// one timer is kept at the model's next event time. Events go to the listener of their request.
import type { EngineEvent, EngineModel, EngineRequest } from "../engine";

export type EngineListener = (event: EngineEvent) => void;

export class EngineDriver {
  private readonly origin = performance.now();
  private readonly listeners = new Map<string, EngineListener>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  private closed = false;

  constructor(readonly engine: EngineModel) {}

  /** Milliseconds on the engine's clock. */
  now(): number {
    return performance.now() - this.origin;
  }

  submit(request: EngineRequest, listener: EngineListener): void {
    if (this.closed) throw new Error("engine driver closed");
    this.listeners.set(request.id, listener);
    this.engine.submit(request, this.now());
    this.pump();
  }

  /** Cancels a request still in the engine (client gone). Its listener hears nothing more. */
  cancel(id: string): void {
    if (!this.listeners.delete(id)) return;
    this.engine.cancel(id, this.now());
    this.pump();
  }

  /** Brings the engine up to now (e.g. before reading its load for /metrics). */
  sync(): void {
    if (!this.closed) this.pump();
  }

  close(): void {
    this.closed = true;
    this.clearTimer();
    this.listeners.clear();
  }

  private pump(): void {
    const events = this.engine.advance(this.now());
    for (const event of events) {
      const listener = this.listeners.get(event.id);
      if (listener === undefined) continue;
      if (event.type === "done") this.listeners.delete(event.id);
      try {
        listener(event);
      } catch {
        // A listener's failure (e.g. writing to a socket that just died) must not stall the engine.
      }
    }
    this.schedule();
  }

  private schedule(): void {
    const at = this.engine.nextEventTime();
    if (at === this.timerAt && this.timer !== null) return;
    this.clearTimer();
    if (at === Number.POSITIVE_INFINITY || this.closed) return;
    this.timerAt = at;
    // Timers fire late, never early; advance() then catches up on every step that ended meanwhile.
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.timerAt = Number.POSITIVE_INFINITY;
        this.pump();
      },
      Math.max(0, Math.ceil(at - this.now())),
    );
    // Open sockets keep the process alive while requests run; an idle engine must not.
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Number.POSITIVE_INFINITY;
  }
}
