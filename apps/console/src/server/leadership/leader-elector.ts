// LeaderElector: keeps this console's view of the leadership lease (console_leases, name
// "console") and tells the runtime when it becomes leader and when it stops being one. The
// decisions are lease.ts's; this module reads the row, writes the decision as a compare-and-set on
// the (holder, term) it read, and runs the loop. It runs on either store (SQLite or PostgreSQL)
// through the Store's shared query builders.
// Two clocks, each for what it can do: the lease's expiry is written and judged on the database
// server's clock (read with the row), the one clock every console shares, so a console whose own
// clock runs ahead cannot take a live lease and one whose clock lags does not wait out a dead
// leader for as long as it lags. How long this console may act as leader after a renewal is a
// duration, measured on its own clock from when it sent the renewal (leadsUntil).
import "server-only";
import { and, eq, getTableColumns } from "drizzle-orm";
import type { Logger } from "pino";
import { databaseNowMs, type Store } from "@meridian/db";
import { decideLease, type LeaseRow, type LeaseTiming, leadsUntil, validateTiming } from "./lease";

export const LEASE_NAME = "console";

/** What the health endpoint and the UI show. */
export interface LeadershipStatus {
  /** This console's instance id. */
  self: string;
  isLeader: boolean;
  /** The holder of the lease as last read ("" when nobody holds it), its URL and its term. */
  leader: string;
  leaderUrl: string | null;
  term: number;
  /** When the lease runs out unless renewed (epoch ms, the database server's clock). */
  expiresAt: number;
}

export interface LeaderElectorDeps {
  store: Store;
  log: Logger;
  /** This console's instance id (unique per process) and where operators reach it. */
  self: { id: string; url: string | null };
  timing: LeaseTiming;
  /** This console's clock for how long it may still act as leader: a duration, so a monotonic one
   * (performance.now). On the wall clock, a step back while the lease could not be renewed kept a
   * deposed leader acting after another console took the lease. */
  now: () => number;
  /** The clock the lease's expiry is written and judged on. By default the database server's;
   * tests that play out expiries round by round pass their own. */
  leaseNow?: () => number;
  /** Called when this console becomes leader, with its fencing term. */
  onElected: (term: number) => void;
  /** Called when it stops being leader (lease lost, not renewed in time, or stop()). */
  onDeposed: (term: number) => void;
}

export class LeaderElector {
  private status: LeadershipStatus;
  /** While leading: the term and the local time until which this console may act as leader. */
  private leading: { term: number; until: number } | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  /** Set by stop(), for good: a stopped elector takes no lease (see start()). */
  private stopped = false;
  /** A term a round took or renewed while stop() ran; stop() releases it once the round ended. */
  private takenWhileStopping: number | null = null;
  private ticking: Promise<void> | null = null;

  constructor(private readonly deps: LeaderElectorDeps) {
    validateTiming(deps.timing);
    this.status = { self: deps.self.id, isLeader: false, leader: "", leaderUrl: null, term: 0, expiresAt: 0 };
  }

  /** The current view (a leader whose renewals stopped succeeding stops counting itself in time). */
  view(): LeadershipStatus {
    this.checkDeadline();
    return { ...this.status };
  }

  /** The term this console leads under, or null when it does not lead. */
  currentTerm(): number | null {
    this.checkDeadline();
    return this.leading?.term ?? null;
  }

  /** Joins the election. Not after stop(): the runtime's duties are stopped for good then, and a
   * restarted loop took the lease it had just released without running onElected, leading with
   * no duties and keeping every other console from taking over. */
  start(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    const loop = async () => {
      await this.tick().catch((error: unknown) => this.deps.log.warn({ err: error }, "leadership check failed; retrying"));
      if (this.running) this.timer = setTimeout(() => void loop(), this.deps.timing.renewEveryMs).unref();
    };
    void loop();
  }

  /** Stops the loop and the duties at once; a leader then releases its lease so that another
   * console takes over without waiting for it to expire. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const held = this.leading?.term;
    this.depose();
    await this.ticking?.catch(() => undefined);
    // A round in flight may have renewed or taken the lease meanwhile; release whichever term we hold.
    const term = this.takenWhileStopping ?? held;
    this.takenWhileStopping = null;
    if (term === undefined) return;
    const { db, tables } = this.deps.store;
    const lease = tables.consoleLeases;
    await db
      .update(lease)
      .set({ expiresAt: 0 })
      .where(and(eq(lease.name, LEASE_NAME), eq(lease.holder, this.deps.self.id), eq(lease.term, term)))
      .catch((error: unknown) => this.deps.log.warn({ err: error }, "could not release the leadership lease; it expires by itself"));
  }

  /** One round: read, decide, compare-and-set. Exposed so that tests drive it with their own clock. */
  async tick(): Promise<void> {
    const round = this.round();
    this.ticking = round;
    try {
      await round;
    } finally {
      if (this.ticking === round) this.ticking = null;
    }
  }

  private async round(): Promise<void> {
    // A stopped elector never leads (a tick() after stop() took the lease without onElected).
    if (this.stopped) return;
    const { db, tables } = this.deps.store;
    const lease = tables.consoleLeases;
    const sentAt = this.deps.now();
    await db.insert(lease).values({ name: LEASE_NAME, holder: "", term: 0, expiresAt: 0, renewedAt: 0 }).onConflictDoNothing();
    const [row] = await db
      .select({ ...getTableColumns(lease), databaseNow: databaseNowMs(this.deps.store.dialect).mapWith(Number) })
      .from(lease)
      .where(eq(lease.name, LEASE_NAME));
    if (!row) throw new Error("leadership lease row missing after insert");
    this.checkDeadline();
    const leaseNow = this.deps.leaseNow?.() ?? row.databaseNow;
    const decision = decideLease(row as LeaseRow, this.deps.self.id, leaseNow, this.deps.timing);
    if (decision.kind === "follow") {
      this.observe(row);
      return;
    }
    const written = await db
      .update(lease)
      .set({ holder: this.deps.self.id, holderUrl: this.deps.self.url, term: decision.term, expiresAt: decision.expiresAt, renewedAt: leaseNow })
      .where(and(eq(lease.name, LEASE_NAME), eq(lease.holder, row.holder), eq(lease.term, row.term)))
      .returning();
    const [mine] = written;
    if (!mine) {
      // Another console changed the row between our read and our write: it won this round.
      const [now] = await db.select().from(lease).where(eq(lease.name, LEASE_NAME));
      if (now) this.observe(now);
      return;
    }
    if (this.stopped) {
      // stop() ran during this round and already deposed us: leading now would be leading without
      // onElected. stop() releases the term once this round ends.
      this.takenWhileStopping = mine.term;
      return;
    }
    if (this.leading && this.leading.term !== mine.term) this.depose();
    const wasLeading = this.leading !== null;
    this.leading = { term: mine.term, until: leadsUntil(sentAt, this.deps.timing) };
    this.status = { self: this.deps.self.id, isLeader: true, leader: mine.holder, leaderUrl: mine.holderUrl, term: mine.term, expiresAt: mine.expiresAt };
    if (!wasLeading) {
      this.deps.log.info({ term: mine.term }, "this console is now the leader");
      this.deps.onElected(mine.term);
    }
  }

  private observe(row: LeaseRow): void {
    if (this.leading && (row.holder !== this.deps.self.id || row.term !== this.leading.term)) {
      this.deps.log.warn({ leader: row.holder, term: row.term }, "another console took the leadership");
      this.depose();
    }
    this.status = {
      self: this.deps.self.id,
      isLeader: this.leading !== null,
      leader: row.holder,
      leaderUrl: row.holderUrl,
      term: row.term,
      expiresAt: row.expiresAt,
    };
  }

  /** A leader whose renewals have not succeeded in time stops acting as one, even without a reply. */
  private checkDeadline(): void {
    if (this.leading && this.deps.now() >= this.leading.until) {
      this.deps.log.warn({ term: this.leading.term }, "leadership lease not renewed in time; stepping down");
      this.depose();
    }
  }

  private depose(): void {
    const leading = this.leading;
    if (!leading) return;
    this.leading = null;
    this.status = { ...this.status, isLeader: false };
    this.deps.onDeposed(leading.term);
  }
}
