// The LB's telemetry log: a bounded ring of TelemetryEvents with gap-free sequence numbers, served as
// a resumable NDJSON stream. Each subscriber owns a cursor into the ring rather than a private queue,
// so a slow subscriber costs no memory: it reads from the ring when its socket drains, and if the ring
// has moved past its cursor it is told exactly which events were dropped. Sequence numbers begin at 1
// in every process, so the log has a boot id: a subscriber that resumes with another process's boot
// is served this process's sequence from its start, not the events after a number it never saw here.
import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { TelemetryEventBody } from "@meridian/lb-core";
import { formatTelemetryNdjsonLine, TELEMETRY_EVENT_SCHEMA, type TelemetryEvent, type TelemetryStreamLine } from "@meridian/protocol";

export class TelemetryLog {
  private readonly ring: (TelemetryEvent | undefined)[];
  private lastSeq = 0;
  private readonly subscribers = new Set<TelemetrySubscriber>();
  /** This process's sequence: a subscriber that names another resumes from the start. */
  readonly boot = randomUUID().replaceAll("-", "");

  constructor(readonly capacity: number) {
    this.ring = new Array<TelemetryEvent | undefined>(capacity);
  }

  get latestSeq(): number {
    return this.lastSeq;
  }

  /** Oldest seq still held (lastSeq + 1 when empty). */
  get oldestSeq(): number {
    return Math.max(1, this.lastSeq - this.capacity + 1);
  }

  append(input: TelemetryEventBody): TelemetryEvent {
    const event: TelemetryEvent = { schema: TELEMETRY_EVENT_SCHEMA, seq: ++this.lastSeq, ...input };
    this.ring[(event.seq - 1) % this.capacity] = event;
    for (const subscriber of this.subscribers) subscriber.pump();
    return event;
  }

  /** The event with this seq, if still held. */
  get(seq: number): TelemetryEvent | undefined {
    if (seq < this.oldestSeq || seq > this.lastSeq) return undefined;
    return this.ring[(seq - 1) % this.capacity];
  }

  /** Events with seq > since, oldest first (for tests and the state page). */
  since(since: number): TelemetryEvent[] {
    const out: TelemetryEvent[] = [];
    for (let seq = Math.max(since + 1, this.oldestSeq); seq <= this.lastSeq; seq++) {
      const event = this.get(seq);
      if (event) out.push(event);
    }
    return out;
  }

  /**
   * Streams NDJSON lines to `res` until the client goes away or close(): a heartbeat, then the events
   * after `since`, or every event held when `boot` names another process's sequence than this one.
   */
  subscribe(res: ServerResponse, since: number, heartbeatMs: number, boot?: string): TelemetrySubscriber {
    const from = boot !== undefined && boot !== this.boot ? 0 : since;
    const subscriber = new TelemetrySubscriber(this, res, from, heartbeatMs, () => this.subscribers.delete(subscriber));
    this.subscribers.add(subscriber);
    subscriber.pump();
    return subscriber;
  }

  close(): void {
    for (const subscriber of [...this.subscribers]) subscriber.close();
  }
}

class TelemetrySubscriber {
  private cursor: number;
  private waitingForDrain = false;
  private closed = false;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    private readonly log: TelemetryLog,
    private readonly res: ServerResponse,
    since: number,
    heartbeatMs: number,
    private readonly onClose: () => void,
  ) {
    // A cursor ahead of the log (the LB restarted and its seq began again) would silently wait for
    // events the subscriber already has numbers for; restart it at the log's end and let the
    // heartbeat's seq tell the subscriber where the log stands.
    this.cursor = since > log.latestSeq ? log.latestSeq : since;
    res.on("drain", () => {
      this.waitingForDrain = false;
      this.pump();
    });
    res.on("close", () => this.close());
    this.heartbeat = setInterval(() => {
      if (!this.waitingForDrain) this.writeHeartbeat();
    }, heartbeatMs);
    this.heartbeat.unref();
    // Said at once, before any event: the subscriber learns which process's sequence follows (and,
    // from an LB older than boot ids, that the sequence began again) before events whose numbers it
    // already holds arrive; it would drop them as duplicates.
    this.writeHeartbeat();
  }

  private writeHeartbeat(): void {
    this.write({ type: "heartbeat", seq: this.log.latestSeq, time: Date.now(), boot: this.log.boot });
  }

  pump(): void {
    if (this.closed || this.waitingForDrain) return;
    const oldest = this.log.oldestSeq;
    if (this.cursor + 1 < oldest && this.log.latestSeq > 0) {
      const fromSeq = this.cursor + 1;
      const toSeq = oldest - 1;
      this.cursor = toSeq;
      if (!this.write({ type: "dropped", fromSeq, toSeq, count: toSeq - fromSeq + 1 })) return;
    }
    while (this.cursor < this.log.latestSeq) {
      const event = this.log.get(this.cursor + 1);
      if (!event) break;
      this.cursor++;
      if (!this.write({ type: "event", event })) return;
    }
  }

  private write(line: TelemetryStreamLine): boolean {
    if (this.closed) return false;
    const ok = this.res.write(formatTelemetryNdjsonLine(line));
    if (!ok) this.waitingForDrain = true;
    return ok;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    this.onClose();
    if (!this.res.writableEnded) this.res.end();
  }
}
