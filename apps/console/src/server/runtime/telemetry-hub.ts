// TelemetryHub: one resumable NDJSON subscription per LB (GET /admin/telemetry?since=lastSeq).
// - Reconnects with backoff and resumes after the last seq it saw.
// - Never counts an event twice: an event whose seq is not above the last one seen is dropped.
// - Never loses a restarted LB's events: seqs begin again at 1 in a new LB process, so the hub resumes
//   with the boot id of the process its last seq counts in. A restarted LB serves its own sequence from
//   the start, and says so in the heartbeat that opens every subscription (another boot id). From an LB
//   older than boot ids, a heartbeat announcing a seq below ours is the only sign of a restart.
// - Feeds the rolling windows of the overview and fans every event out to the TunerService.
import "server-only";
import type { Logger } from "pino";
import type { Store } from "@meridian/db";
import { parseTelemetryNdjsonLine, type TelemetryEvent, type TelemetryStreamLine } from "@meridian/protocol";
import type { LbAdminClient, TelemetryResume } from "./lb-admin-client";
import { RollingStats } from "./rolling-stats";
import { backoffMs, WakeSignal } from "./wake-signal";

/** An event line is about a kilobyte. A partial line far longer is not an LB's telemetry (something
 * streams without newlines) and would hold the console's memory without bound. */
export const MAX_LINE_CHARS = 1 << 20;

/** What the hub uses, and nothing else. */
export interface TelemetryHubDeps {
  store: Store;
  log: Logger;
  lbClient: Pick<LbAdminClient, "telemetry">;
}

export interface SubscriptionStatus {
  lbId: string;
  connected: boolean;
  lastSeq: number;
  events: number;
  duplicates: number;
  dropped: number;
  reconnects: number;
  lastError: string | null;
  /** How late the last event arrived: receipt time minus the time the LB finished its request (null
   * before one). An event's `time` is the request's arrival, so its E2E time is added back. */
  lastEventLagMs: number | null;
}

interface Subscription {
  status: SubscriptionStatus;
  /** The LB process whose sequence `status.lastSeq` counts in (null: not heard yet, or an older LB). */
  boot: string | null;
  controller: AbortController;
  signal: WakeSignal;
  adminBase: string;
  stopped: boolean;
}

export type EventListener = (event: TelemetryEvent) => void;

export class TelemetryHub {
  readonly stats = new RollingStats();
  private readonly subs = new Map<string, Subscription>();
  private readonly listeners: EventListener[] = [];
  private running = false;

  constructor(private readonly deps: TelemetryHubDeps) {}

  onEvent(listener: EventListener): void {
    this.listeners.push(listener);
  }

  async start(): Promise<void> {
    // Started again (a console deposed and re-elected), the hub subscribes from every LB's start and
    // is sent its buffer anew; the stats of the last term would count those events twice.
    if (!this.running) this.stats.clear();
    this.running = true;
    await this.sync();
  }

  stop(): void {
    this.running = false;
    for (const id of [...this.subs.keys()]) this.unsubscribe(id);
  }

  status(): SubscriptionStatus[] {
    return [...this.subs.values()].map((s) => ({ ...s.status }));
  }

  /** Opens subscriptions for new LBs and closes those of deleted (or moved) LBs. */
  async sync(): Promise<void> {
    if (!this.running) return;
    const { db, tables } = this.deps.store;
    const rows = await db.select().from(tables.loadBalancers);
    // Stopped while reading: open nothing.
    if (!this.running) return;
    const wanted = new Map(rows.map((lb) => [lb.id, lb.adminUrl ?? lb.url]));
    // An LB whose admin URL changed is most likely the same process: its new subscription resumes
    // after the last seq seen instead of replaying the LB's buffer into the tuner. Were it another
    // LB, its first heartbeat (a seq below ours) starts the sequence again (handleLine).
    const resumeAfter = new Map<string, TelemetryResume>();
    for (const [id, sub] of this.subs) {
      if (wanted.get(id) === sub.adminBase) continue;
      if (wanted.has(id)) resumeAfter.set(id, { since: sub.status.lastSeq, boot: sub.boot });
      this.unsubscribe(id);
    }
    for (const [id, adminBase] of wanted) {
      if (!this.subs.has(id)) this.subscribe(id, adminBase, resumeAfter.get(id) ?? { since: 0, boot: null });
    }
  }

  /** Handles one parsed event (exposed for tests and in-process feeds). Returns false for a duplicate. */
  ingest(lbId: string, event: TelemetryEvent): boolean {
    const sub = this.subs.get(lbId);
    if (sub) {
      if (event.seq <= sub.status.lastSeq) {
        sub.status.duplicates += 1;
        return false;
      }
      sub.status.lastSeq = event.seq;
      sub.status.events += 1;
      sub.status.lastEventLagMs = Math.max(0, Date.now() - (event.time + event.e2eMs));
    }
    this.stats.add(event);
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.deps.log.error({ lbId, err: error }, "telemetry listener failed");
      }
    }
    return true;
  }

  private subscribe(lbId: string, adminBase: string, resume: TelemetryResume): void {
    const sub: Subscription = {
      status: { lbId, connected: false, lastSeq: resume.since, events: 0, duplicates: 0, dropped: 0, reconnects: 0, lastError: null, lastEventLagMs: null },
      boot: resume.boot,
      controller: new AbortController(),
      signal: new WakeSignal(),
      adminBase,
      stopped: false,
    };
    this.subs.set(lbId, sub);
    void this.run(lbId, sub);
  }

  private unsubscribe(lbId: string): void {
    const sub = this.subs.get(lbId);
    if (!sub) return;
    sub.stopped = true;
    sub.controller.abort();
    sub.signal.wake();
    this.subs.delete(lbId);
  }

  private async run(lbId: string, sub: Subscription): Promise<void> {
    let attempt = 0;
    while (!sub.stopped) {
      const gotData = await this.readOnce(lbId, sub).catch((error: unknown) => {
        sub.status.lastError = error instanceof Error ? error.message : String(error);
        return false;
      });
      sub.status.connected = false;
      if (sub.stopped) break;
      attempt = gotData ? 0 : attempt + 1;
      sub.status.reconnects += 1;
      await sub.signal.wait(backoffMs(attempt, 200, 5_000));
      if (!sub.stopped) sub.controller = new AbortController();
    }
  }

  /** Reads the stream until it ends; true when at least one line arrived (resets the backoff). */
  private async readOnce(lbId: string, sub: Subscription): Promise<boolean> {
    const resume = { since: sub.status.lastSeq, boot: sub.boot };
    const response = await this.deps.lbClient.telemetry({ id: lbId, adminBase: sub.adminBase }, resume, sub.controller.signal);
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new Error(`GET /admin/telemetry answered ${response.statusCode}`);
    }
    sub.status.connected = true;
    sub.status.lastError = null;
    let gotData = false;
    let pending = "";
    const decoder = new TextDecoder();
    reading: for await (const chunk of response.body) {
      if (sub.stopped) break;
      // Only the new text can hold the next newline: rescanning the whole partial line on every
      // chunk made a long one quadratic.
      const scanned = pending.length;
      pending += decoder.decode(chunk as Buffer, { stream: true });
      let newline = pending.indexOf("\n", scanned);
      while (newline >= 0) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (line.length > 0) {
          gotData = true;
          // The rest of this read belongs to the sequence being left: an event in it would move the
          // resume point past the new sequence's first events.
          if (this.handleLine(lbId, sub, line) === "resubscribe") break reading;
        }
        newline = pending.indexOf("\n");
      }
      if (pending.length > MAX_LINE_CHARS) {
        throw new Error(`telemetry line of over ${MAX_LINE_CHARS} characters without a newline: not an LB's telemetry; reconnecting`);
      }
    }
    return gotData;
  }

  /** Handles one line; "resubscribe" when the stream must be left and opened again from seq 0. */
  private handleLine(lbId: string, sub: Subscription, text: string): "continue" | "resubscribe" {
    let line: TelemetryStreamLine;
    try {
      line = parseTelemetryNdjsonLine(text);
    } catch (error) {
      sub.status.lastError = error instanceof Error ? error.message : String(error);
      this.deps.log.warn({ lbId, error: sub.status.lastError }, "bad telemetry line skipped");
      return "continue";
    }
    switch (line.type) {
      case "event":
        this.ingest(lbId, line.event);
        return "continue";
      case "dropped":
        sub.status.dropped += line.count;
        sub.status.lastSeq = Math.max(sub.status.lastSeq, line.toSeq);
        return "continue";
      case "heartbeat":
        return this.heartbeat(lbId, sub, line.seq, line.boot);
    }
  }

  private heartbeat(lbId: string, sub: Subscription, seq: number, boot: string | undefined): "continue" | "resubscribe" {
    if (boot !== undefined && sub.boot !== null && boot !== sub.boot) {
      // Another process: asked with our boot id, it serves its own sequence from the start, which
      // follows this heartbeat.
      this.deps.log.info({ lbId, lastSeq: sub.status.lastSeq, lbSeq: seq }, "LB telemetry sequence restarted");
      sub.status.lastSeq = 0;
      sub.boot = boot;
      return "continue";
    }
    // A boot id where the last seq counted had none: that seq is an older LB's, and this is another
    // process (the LB was upgraded), which served its own sequence from `since`, past its first events.
    const upgraded = boot !== undefined && sub.boot === null && sub.status.lastSeq > 0;
    if (upgraded || seq < sub.status.lastSeq) {
      // Or no boot id to go by (an older LB): a seq below ours means the sequence began again.
      // Resubscribe from its start rather than skip its events as duplicates.
      this.deps.log.info({ lbId, lastSeq: sub.status.lastSeq, lbSeq: seq }, "LB telemetry sequence restarted");
      sub.status.lastSeq = 0;
      sub.boot = boot ?? null;
      sub.controller.abort();
      return "resubscribe";
    }
    if (boot !== undefined) sub.boot = boot;
    return "continue";
  }
}
