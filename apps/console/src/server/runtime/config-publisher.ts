// ConfigPublisher: turns the database's view of an LB into versioned LbConfigs and pushes them to
// the LB's PUT /admin/config until the LB acknowledges.
// - A version is recorded (lb_configs) only when the built config differs from the LB's latest one,
//   so unrelated edits do not disturb the tuner's scoring windows.
// - Versions increase per LB; a 409 (the LB runs a newer version, e.g. after the console's DB was
//   reset) re-records the same content above the LB's version.
// - One push loop per LB retries with backoff; only the latest version is ever pushed.
// - The version each LB reports running (HealthMonitor's probes, 409 answers) is remembered: new
//   versions are numbered above it, and an LB that reports less than it acknowledged lost its config
//   and is pushed a fresh version.
// - Only the leader records versions, each under its leadership term (lb_configs.term), fenced: a
//   console that lost the lease in the meantime records nothing (leadership/fence.ts). A follower's
//   publish() records nothing and returns the current version; the leader's reconcile publishes
//   what the follower changed.
// - While the console stores no limits for an LB, the LB's own are adopted before a push would
//   replace them, and nothing is pushed while they cannot be read yet (lb-settings-adoption.ts).
// - Until an LB has answered once, an unreachable LB is only starting (npm start brings the LBs and
//   the console up in any order): those retries log at debug. Once it has answered, losing it is
//   news and logs at warn.
import "server-only";
import { and, desc, eq, max, sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { LbConfig } from "@meridian/protocol";
import { largerOf, type LoadBalancerRow, type Queryable, type Store } from "@meridian/db";
import { whileLeading } from "../leadership/fence";
import { buildLbConfig, configContent } from "./config-builder";
import type { BeforePush, SettingsAdoption } from "./lb-settings-adoption";
import { type LbAdminClient, type PutConfigResult, TokenReadError } from "./lb-admin-client";
import { backoffMs, WakeSignal } from "./wake-signal";

/** Who asked for a version: the TunerService (from inside its own serialised work, so it handles
 * the version there and then) or anyone else. */
export type PublishSource = "tuner" | "other";
/** Awaited by publish() before it returns. */
export type VersionListener = (lbId: string, version: number, config: LbConfig, source: PublishSource) => void | Promise<void>;

export interface PushStatus {
  lastAttemptAt: number | null;
  lastError: string | null;
}

/** What the publisher uses, and nothing else. */
export interface ConfigPublisherDeps {
  store: Store;
  log: Logger;
  lbClient: Pick<LbAdminClient, "putConfig" | "state">;
  /** The term this console leads under: null when it does not lead, 0 when no election runs (a
   * runtime that was never started: scripts, tests, the demo seed), which records unfenced. */
  leadership: { currentTerm(): number | null };
  /** ConsoleMetrics' counter, declared here because the metrics module reads this one. */
  metrics: { countConfigPush(lbId: string, result: PutConfigResult["kind"]): void };
  /** Adopts an LB's running limits before the first push would replace them (lb-settings-adoption.ts). */
  adoption?: Pick<SettingsAdoption, "beforePush">;
}

/** The lease moved on while this console was recording a version: it records nothing. */
class Fenced extends Error {}

interface PushLoop {
  signal: WakeSignal;
  status: PushStatus;
  /** The LB answered a push at least once (any HTTP answer). */
  answered: boolean;
  /** The config version the LB last refused (400): its backoff is not cut short by the health
   * monitor's version reports (an LB refusing every push got one every round, 2 s apart). */
  refusedVersion: number | null;
  /** The log has said this LB's own limits cannot be read and the defaults are pushed. */
  defaultsSaid: boolean;
}

export class ConfigPublisher {
  private readonly loops = new Map<string, PushLoop>();
  private readonly listeners: VersionListener[] = [];
  /** The config version each LB last reported running. */
  private readonly reportedVersions = new Map<string, number>();
  private running = false;

  constructor(private readonly deps: ConfigPublisherDeps) {}

  onNewVersion(listener: VersionListener): void {
    this.listeners.push(listener);
  }

  /** Records a first version for LBs that have none and starts every LB's push loop. Like
   * publishAll, an LB whose config cannot be built (e.g. a row an older console stored) is logged
   * and skipped: thrown from here, it stopped the leader's other duties from starting. */
  async start(): Promise<void> {
    this.running = true;
    const { db, tables } = this.deps.store;
    for (const lb of await db.select().from(tables.loadBalancers)) {
      if (!this.running) return;
      if (lb.configVersion !== 0) {
        this.kick(lb.id);
        continue;
      }
      try {
        await this.publish(lb.id);
      } catch (error) {
        this.deps.log.error({ lbId: lb.id, err: error }, "first config version not recorded; the other LBs are published");
      }
    }
  }

  stop(): void {
    this.running = false;
    for (const loop of this.loops.values()) loop.signal.wake();
    this.loops.clear();
  }

  status(lbId: string): PushStatus {
    return this.loops.get(lbId)?.status ?? { lastAttemptAt: null, lastError: null };
  }

  /** Records a new version when the LB's config changed (or `force`), then wakes its push loop.
   * Returns the LB's latest version, or null when the LB does not exist. */
  async publish(lbId: string, options: { force?: boolean; source?: PublishSource } = {}): Promise<number | null> {
    const { db, tables } = this.deps.store;
    const term = this.deps.leadership.currentTerm();
    if (term === null) {
      const { loadBalancers } = tables;
      const [row] = await db.select({ version: loadBalancers.configVersion }).from(loadBalancers).where(eq(loadBalancers.id, lbId)).limit(1);
      return row?.version ?? null;
    }
    let outcome: { version: number; config: LbConfig | null } | null;
    try {
      outcome = await this.record(lbId, term, options.force ?? false);
    } catch (error) {
      if (!(error instanceof Fenced)) throw error;
      this.deps.log.warn({ lbId, term }, "leadership lost while recording a config version; nothing recorded");
      return null;
    }
    if (!outcome) return null;
    if (outcome.config) {
      for (const listener of this.listeners) await listener(lbId, outcome.version, outcome.config, options.source ?? "other");
    }
    this.kick(lbId);
    return outcome.version;
  }

  private record(lbId: string, term: number, force: boolean): Promise<{ version: number; config: LbConfig | null } | null> {
    return this.deps.store.transaction(async (tx) => {
      const { consoleLeases, lbConfigs, loadBalancers } = tx.tables;
      // A no-op update that takes the LB's row lock first (PostgreSQL; on SQLite the transaction
      // holds the whole database): two records for one LB at once would pick the same next version.
      const [lb] = await tx.db
        .update(loadBalancers)
        .set({ configVersion: sql`${loadBalancers.configVersion}` })
        .where(eq(loadBalancers.id, lbId))
        .returning();
      if (!lb) return null;
      const [latest] = await tx.db.select().from(lbConfigs).where(eq(lbConfigs.lbId, lbId)).orderBy(desc(lbConfigs.version)).limit(1);
      const draft = await buildLbConfig(tx, lbId, 0);
      if (!draft) return null;
      if (!force && latest && configContent(JSON.parse(latest.json) as LbConfig) === configContent(draft)) {
        return { version: lb.configVersion, config: null };
      }
      const version = await this.nextVersion(tx, lbId, lb.configVersion, lb.ackedVersion, latest?.version ?? 0);
      const config: LbConfig = { ...draft, version };
      await tx.db.insert(lbConfigs).values({ lbId, version, json: JSON.stringify(config), createdAt: Date.now(), term });
      const fence = term === 0 ? undefined : whileLeading(consoleLeases, term);
      const moved = await tx.db
        .update(loadBalancers)
        .set({ configVersion: version })
        .where(and(eq(loadBalancers.id, lbId), fence))
        .returning({ id: loadBalancers.id });
      if (moved.length === 0) throw new Fenced();
      return { version, config };
    });
  }

  /** Re-evaluates every LB's config (after a topology change). One LB whose config cannot be built
   * (e.g. a row an older console stored) is logged and skipped: the others still get their changes. */
  async publishAll(): Promise<void> {
    const { db, tables } = this.deps.store;
    for (const lb of await db.select({ id: tables.loadBalancers.id }).from(tables.loadBalancers)) {
      try {
        await this.publish(lb.id);
      } catch (error) {
        this.deps.log.error({ lbId: lb.id, err: error }, "config version not recorded; the other LBs are published");
      }
    }
  }

  /** Wakes (or starts) the LB's push loop, e.g. when the LB came back or reports an older version. */
  kick(lbId: string): void {
    if (!this.running) return;
    const existing = this.loops.get(lbId);
    if (existing) {
      existing.signal.wake();
      return;
    }
    const loop: PushLoop = {
      signal: new WakeSignal(),
      status: { lastAttemptAt: null, lastError: null },
      answered: false,
      refusedVersion: null,
      defaultsSaid: false,
    };
    this.loops.set(lbId, loop);
    void this.runLoop(lbId, loop).catch((error: unknown) => {
      this.deps.log.error({ lbId, err: error }, "config push loop crashed");
    });
  }

  forget(lbId: string): void {
    const loop = this.loops.get(lbId);
    this.loops.delete(lbId);
    this.reportedVersions.delete(lbId);
    loop?.signal.wake();
  }

  /** The version the LB reports running (from its /admin/state). An LB that reports less than it
   * acknowledged lost its config (restarted without its state file): it gets a fresh push. One that
   * reports more than this database ever recorded runs a config the database does not know (it was
   * restored from a backup): it gets the database's config, numbered above its own (nextVersion).
   * Both need a second report, as a push that lands between reading the LB's row and its answer
   * reads one version ahead once. */
  async onReportedVersion(lb: LoadBalancerRow, version: number): Promise<void> {
    const previous = this.reportedVersions.get(lb.id);
    this.reportedVersions.set(lb.id, version);
    const again = previous !== undefined && lb.state !== "failed-over";
    if (version < lb.ackedVersion && again) {
      this.deps.log.warn({ lbId: lb.id, reported: version, acked: lb.ackedVersion }, "LB lost its config; re-pushing");
      await this.publish(lb.id, { force: true });
    } else if (version > lb.configVersion && (previous ?? 0) > lb.configVersion && again) {
      this.deps.log.warn(
        { lbId: lb.id, reported: version, recorded: lb.configVersion },
        "LB runs a config this database never recorded (restored?); re-pushing",
      );
      await this.publish(lb.id, { force: true });
    } else if (version < lb.configVersion && this.loops.get(lb.id)?.refusedVersion !== lb.configVersion) {
      this.kick(lb.id);
    }
  }

  private async nextVersion({ db, tables }: Queryable, lbId: string, ...known: number[]): Promise<number> {
    const { lbConfigs } = tables;
    const [row] = await db
      .select({ max: max(lbConfigs.version) })
      .from(lbConfigs)
      .where(eq(lbConfigs.lbId, lbId));
    const recorded = Number(row?.max ?? 0);
    const reported = this.reportedVersions.get(lbId) ?? 0;
    return Math.max(recorded, reported, ...known) + 1;
  }

  private async runLoop(lbId: string, loop: PushLoop): Promise<void> {
    try {
      await this.pushWhileWanted(lbId, loop);
    } finally {
      // However the loop ended (its LB row gone, e.g. deleted on another console, or a crash), a
      // later kick() must start a new one: an LB re-created with the same id is pushed at once.
      if (this.loops.get(lbId) === loop) this.loops.delete(lbId);
    }
  }

  private async pushWhileWanted(lbId: string, loop: PushLoop): Promise<void> {
    let attempt = 0;
    while (this.running && this.loops.get(lbId) === loop) {
      const { db, tables } = this.deps.store;
      const { lbConfigs, loadBalancers } = tables;
      const [lb] = await db.select().from(loadBalancers).where(eq(loadBalancers.id, lbId)).limit(1);
      if (!lb) break;
      // Nothing to push, or the LB is failed over (dead until failback): sleep until woken.
      if (lb.ackedVersion >= lb.configVersion || lb.state === "failed-over") {
        attempt = 0;
        await loop.signal.wait(60_000);
        continue;
      }
      const [row] = await db
        .select()
        .from(lbConfigs)
        .where(and(eq(lbConfigs.lbId, lbId), eq(lbConfigs.version, lb.configVersion)))
        .limit(1);
      if (!row) {
        await this.publish(lbId, { force: true });
        continue;
      }
      // A push replaces the LB's whole config: while the console stores no limits for it, the ones
      // it runs are adopted first (then published as a newer version, which this loop pushes).
      if (lb.limitsJson === null && this.deps.adoption) {
        const wait = await this.adoptBeforePush(this.deps.adoption, lb, loop, attempt);
        if (wait === "again") continue;
        if (wait !== null) {
          await loop.signal.wait(wait);
          attempt += 1;
          continue;
        }
      }
      loop.status.lastAttemptAt = Date.now();
      let result: PutConfigResult;
      try {
        result = await this.deps.lbClient.putConfig({ id: lb.id, adminBase: lb.adminUrl ?? lb.url }, JSON.parse(row.json) as LbConfig);
      } catch (error) {
        // Nothing was sent (the console's database failed reading the LB's token): the console's
        // failure, not the LB's answer. Not counted as a push, not a refusal (whose backoff is long
        // and which the health rounds leave alone): retried as an unreachable LB is.
        const what = error instanceof TokenReadError ? "the console could not read the LB's token from its database" : "the console failed";
        loop.status.lastError = `not pushed: ${what}; retrying`;
        loop.refusedVersion = null;
        if (attempt % 10 === 0) {
          this.deps.log.error({ lbId, version: row.version, attempt, err: error }, "config push not sent: the console failed before sending it");
        }
        await loop.signal.wait(backoffMs(attempt, 250, 10_000));
        attempt += 1;
        continue;
      }
      this.deps.metrics.countConfigPush(lbId, result.kind);
      if (result.kind !== "unreachable") loop.answered = true;
      loop.refusedVersion = result.kind === "rejected" ? row.version : null;
      if (result.kind === "acked") {
        loop.status.lastError = null;
        attempt = 0;
        await this.markAcked(lbId, row.version);
        this.deps.log.debug({ lbId, version: row.version }, "LB acknowledged config");
        continue;
      }
      loop.status.lastError = result.message;
      if (result.kind === "stale") {
        // The LB runs a version at least as new as ours: record the same content above it.
        const lbVersion = result.lbVersion ?? (await this.deps.lbClient.state({ id: lb.id, adminBase: lb.adminUrl ?? lb.url })).state?.configVersion;
        if (lbVersion !== undefined && lbVersion !== null) this.reportedVersions.set(lbId, Math.max(lbVersion, this.reportedVersions.get(lbId) ?? 0));
        this.deps.log.warn({ lbId, version: row.version, lbVersion }, "LB holds a newer config version; bumping");
        await this.publish(lbId, { force: true });
        attempt += 1;
        if (attempt > 3) await loop.signal.wait(backoffMs(attempt, 250, 10_000));
        continue;
      }
      // First failure and then every tenth: a dead LB retries for as long as it stays dead.
      if (attempt % 10 === 0) {
        const level = loop.answered || result.kind === "rejected" ? "warn" : "debug";
        this.deps.log[level](
          { lbId, version: row.version, attempt, error: result.message },
          loop.answered ? "config push failed; retrying" : "LB not answering yet; config push retrying",
        );
      }
      await loop.signal.wait(backoffMs(attempt, 250, result.kind === "rejected" ? 30_000 : 10_000));
      attempt += 1;
    }
  }

  /** Asks the adoption before a push to an LB the console stores no limits for
   * (lb-settings-adoption.ts): null to push now, "again" to read the LB's row again (limits were
   * stored, or adopted and published), else how long to wait before asking again (the LB could not
   * be read yet: a push now would replace the limits it may still answer with). */
  private async adoptBeforePush(
    adoption: Pick<SettingsAdoption, "beforePush">,
    lb: LoadBalancerRow,
    loop: PushLoop,
    attempt: number,
  ): Promise<number | "again" | null> {
    let outcome: BeforePush;
    try {
      outcome = await adoption.beforePush(lb);
    } catch (error) {
      loop.status.lastError = "not pushed: the console failed storing the LB's limits; retrying";
      if (attempt % 10 === 0) this.deps.log.error({ lbId: lb.id, attempt, err: error }, "config push held: the LB's limits were not stored");
      return backoffMs(attempt, 250, 10_000);
    }
    switch (outcome.kind) {
      case "adopted":
        await this.publishAll();
        return "again";
      case "stored":
        return "again";
      case "push-defaults":
        // Info, not warn: nothing failed, the push goes on as documented; once acknowledged, the
        // defaults are stored and audited as lb.limits-defaults with this reason.
        if (!loop.defaultsSaid) {
          loop.defaultsSaid = true;
          this.deps.log.info(
            { lbId: lb.id, reason: outcome.reason },
            "the LB's own limits cannot be read (an older LB build?): pushing the console's defaults; set its limits on the LBs page",
          );
        }
        return null;
      case "wait":
        loop.status.lastAttemptAt = Date.now();
        loop.status.lastError = `not pushed yet: the limits the LB runs could not be read (${outcome.reason}); retrying`;
        // As an unanswered push logs: at debug until the LB first answered (it is only starting).
        if (attempt % 10 === 0) {
          this.deps.log[loop.answered ? "warn" : "debug"](
            { lbId: lb.id, attempt, reason: outcome.reason },
            loop.answered
              ? "config push held: the LB's running limits could not be read; retrying"
              : "LB not answering yet; config push retrying (its running limits are read first)",
          );
        }
        return backoffMs(attempt, 250, 10_000);
    }
  }

  private async markAcked(lbId: string, version: number): Promise<void> {
    const now = Date.now();
    await this.deps.store.transaction(async ({ db, tables }) => {
      const { lbConfigs, loadBalancers } = tables;
      // The larger of the two: an ack of an older version that arrives late never lowers what the LB acknowledged.
      await db
        .update(loadBalancers)
        .set({ ackedVersion: largerOf(loadBalancers.ackedVersion, version) })
        .where(eq(loadBalancers.id, lbId));
      await db
        .update(lbConfigs)
        .set({ acknowledgedAt: now })
        .where(and(eq(lbConfigs.lbId, lbId), eq(lbConfigs.version, version)));
    });
  }
}
