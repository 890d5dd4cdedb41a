// Adopting an LB's running settings, once. Every config the console pushes replaces the LB's whole
// config, limits included, so an LB started from its own config file (say maxBodyBytes 32 MiB, a
// replica's maxConcurrency) would silently go back to the console's defaults at its first push.
// The rule: while the console stores no limits for an LB (load_balancers.limits_json is null: never
// set by an operator, never adopted), the leader reads the config the LB runs (GET /admin/config,
// once the LB proved it holds its token) and stores it as the console's own:
// - the LB's limits, only those that differ from the protocol's defaults (the rest stay defaults,
//   shown as such, and follow the protocol if it changes them);
// - its routing settings (probes, index, sessionKeyBlocks), the same way, where the console stores
//   none (load_balancers.routing_settings_json null: an operator who set them first keeps them);
// - a replica's maxConcurrency / cacheCapacityTokens the LB runs with, where the console stores none
//   for that replica (an operator's value is never overwritten).
// It is audited (lb.adopt-settings) and published like an operator's edit. After it the LB's limits
// are stored ("{}" when every one was a default), so nothing is adopted twice; an operator setting
// the limits first (on create or on the LBs page) means there is nothing to adopt. limits_json is
// the one "adopted yet?" mark for everything adopted (the push loop holds a push on it): one read,
// one adoption, not one per setting.
//
// Only an LB that never acknowledged a console config (ackedVersion 0) still runs its own file.
// Once it runs a console config, what it would answer is what the console pushed: "adopting" that
// stored the console's defaults and called them the LB's. So for such an LB (one the console pushed
// its defaults to because it could not be read, or any LB registered before adoption existed) the
// console reads nothing and stores its own defaults (limits and routing settings, each where none is
// stored), audited as lb.limits-defaults: the stored value changes (the LBs page no longer says
// "not adopted yet"), nothing the LB runs does.
//
// The push loop asks first (beforePush) and does what the read allows:
// - the LB answered a config: adopted, then published; the push carries it;
// - the LB has no such endpoint (404/405: an older build) or answers something that is no config:
//   nothing can be read, now or later, so the console's defaults are pushed;
// - the read failed for a passing reason (unreachable, timeout, 5xx, the token refused): nothing is
//   pushed yet; the push loop retries on its backoff (a push would reach the same LB, and replace
//   the limits it might still answer with).
// Why here, at the leader's state probe and the push loop, and not at registration: a registered LB
// cannot answer the console before it is started with the token the console issues at registration.
import "server-only";
import { and, eq, isNull } from "drizzle-orm";
import type { Logger } from "pino";
import { type LbConfig, safeParseLbConfig } from "@meridian/protocol";
import type { LoadBalancerRow, Queryable, Store } from "@meridian/db";
import { type Actor, recordAudit } from "../audit-trail";
import { differencesFromDefaults, limitsJson } from "../services/lbs-limits";
import { routingDifferencesFromDefaults, routingSettingsJson } from "../services/lbs-routing-settings";
import { getText } from "./admin-get";
import type { LbAdminClient, LbEndpoint } from "./lb-admin-client";

/** What GET /admin/config said: the config the LB runs; `none`: it answered, but with no config the
 * console could adopt (404/405 from an older build, a body that is no config), which asking again
 * will not change; `unavailable`: no answer worth judging yet (unreachable, timeout, 5xx, 401). */
export type RunningConfig = { kind: "config"; config: LbConfig } | { kind: "none"; reason: string } | { kind: "unavailable"; reason: string };

/** Reads the config an LB reports running; never throws. */
export type RunningConfigReader = (lb: LbEndpoint) => Promise<RunningConfig>;

const READ_TIMEOUT_MS = 5_000;

/** GET /admin/config with the LB's token (presented only once the LB proved it holds it). */
export function runningConfigReader(client: Pick<LbAdminClient, "auth" | "answered">, options: { timeoutMs?: number } = {}): RunningConfigReader {
  const timeoutMs = options.timeoutMs ?? READ_TIMEOUT_MS;
  return async (lb) => {
    const base = lb.adminBase.replace(/\/+$/, "");
    let status: number;
    let text: string;
    try {
      ({ status, text } = await getText(`${base}/admin/config`, { headers: await client.auth(lb), timeoutMs }));
      client.answered(lb, status);
    } catch (error) {
      return { kind: "unavailable", reason: error instanceof Error ? error.message : String(error) };
    }
    if (status === 404 || status === 405) return { kind: "none", reason: `GET /admin/config answered ${status} (an LB build without it)` };
    if (status !== 200) return { kind: "unavailable", reason: `GET /admin/config answered ${status}` };
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return { kind: "none", reason: "GET /admin/config answered a body that is not JSON" };
    }
    const parsed = safeParseLbConfig(body);
    return parsed.success ? { kind: "config", config: parsed.data } : { kind: "none", reason: "GET /admin/config answered no config the console accepts" };
  };
}

/** Stores what `running` holds as the LB's settings when the console stores none yet; true when it
 * did. In one transaction with its audit row. Every write is conditional on the value still being
 * unset (`IS NULL` in the UPDATE itself, not only in an earlier read): under PostgreSQL's read
 * committed an operator's edit committed between the read and the write would otherwise be
 * overwritten, and of two adoptions racing (the push loop and the probe) only one writes. */
async function adoptRunningSettings(store: Store, actor: Actor, lbId: string, running: LbConfig): Promise<boolean> {
  return await store.transaction(async (tx) => {
    const { loadBalancers, replicas } = tx.tables;
    const limits = differencesFromDefaults(running.limits);
    // Also only while the LB has acknowledged no console config: one acknowledged since the row was
    // read runs the console's limits, not its own (recordConsoleDefaults then applies).
    const [lb] = await tx.db
      .update(loadBalancers)
      .set({ limitsJson: limitsJson(limits) })
      .where(and(eq(loadBalancers.id, lbId), isNull(loadBalancers.limitsJson), eq(loadBalancers.ackedVersion, 0)))
      .returning({ ackedVersion: loadBalancers.ackedVersion });
    if (!lb) return false;
    const routingSettings = routingDifferencesFromDefaults(running);
    const routingAdopted = await storeRoutingSettingsIfUnset(tx, lbId, routingSettingsJson(routingSettings));
    const replicaChanges: Record<string, { maxConcurrency?: number; cacheCapacityTokens?: number }> = {};
    for (const reported of running.replicas) {
      const change: { maxConcurrency?: number; cacheCapacityTokens?: number } = {};
      // One column at a time, each only where the console stores none (an operator's value stays).
      if (reported.maxConcurrency !== undefined) {
        const set = await tx.db
          .update(replicas)
          .set({ maxConcurrency: reported.maxConcurrency })
          .where(and(eq(replicas.id, reported.id), isNull(replicas.maxConcurrency)))
          .returning({ id: replicas.id });
        if (set.length > 0) change.maxConcurrency = reported.maxConcurrency;
      }
      if (reported.cacheCapacityTokens !== undefined) {
        const set = await tx.db
          .update(replicas)
          .set({ cacheCapacityTokens: reported.cacheCapacityTokens })
          .where(and(eq(replicas.id, reported.id), isNull(replicas.cacheCapacityTokens)))
          .returning({ id: replicas.id });
        if (set.length > 0) change.cacheCapacityTokens = reported.cacheCapacityTokens;
      }
      if (Object.keys(change).length > 0) replicaChanges[reported.id] = change;
    }
    await recordAudit(
      tx,
      actor,
      "lb.adopt-settings",
      `lb:${lbId}`,
      { limits: null, ...(routingAdopted ? { routingSettings: null } : {}) },
      { limits, ...(routingAdopted ? { routingSettings } : {}), replicas: replicaChanges, fromVersion: running.version, lbAckedVersion: lb.ackedVersion },
    );
    return true;
  });
}

/** Stores `json` as the LB's routing settings where the console stores none (an operator's stay):
 * conditional in the UPDATE itself, as the limits are; true when it did. */
async function storeRoutingSettingsIfUnset(tx: Queryable, lbId: string, json: string): Promise<boolean> {
  const { loadBalancers } = tx.tables;
  const set = await tx.db
    .update(loadBalancers)
    .set({ routingSettingsJson: json })
    .where(and(eq(loadBalancers.id, lbId), isNull(loadBalancers.routingSettingsJson)))
    .returning({ id: loadBalancers.id });
  return set.length > 0;
}

/** Stores the console's defaults ("{}") as the limits of an LB that runs a console config, when the
 * console stores none yet, and as its routing settings where none are stored; true when it did.
 * Audited under its own name, lb.limits-defaults, not lb.adopt-settings: nothing of the LB's was
 * read or kept, and the trail must not say otherwise. It is audited at all because the stored
 * settings change (from "none" to "all defaults"), and an operator wondering why the LB's own file
 * limits are gone finds here when and why. */
async function recordConsoleDefaults(store: Store, actor: Actor, lbId: string, notRead: string | null): Promise<boolean> {
  return await store.transaction(async (tx) => {
    const { loadBalancers } = tx.tables;
    const [lb] = await tx.db
      .update(loadBalancers)
      .set({ limitsJson: limitsJson({}) })
      .where(and(eq(loadBalancers.id, lbId), isNull(loadBalancers.limitsJson)))
      .returning({ ackedVersion: loadBalancers.ackedVersion });
    if (!lb) return false;
    const routingDefaults = await storeRoutingSettingsIfUnset(tx, lbId, routingSettingsJson({}));
    const why = `the LB runs a config the console pushed (acknowledged version ${lb.ackedVersion}), so its ${routingDefaults ? "limits and routing settings are" : "limits are"} the console's defaults; nothing was read from it`;
    await recordAudit(
      tx,
      actor,
      "lb.limits-defaults",
      `lb:${lbId}`,
      { limits: null, ...(routingDefaults ? { routingSettings: null } : {}) },
      { limits: {}, ...(routingDefaults ? { routingSettings: {} } : {}), why, ...(notRead ? { notAdopted: notRead } : {}) },
    );
    return true;
  });
}

/** What the push loop does after asking (lb-settings-adoption.ts, header):
 * - `adopted`: the LB's settings are stored; publish, then push the new version;
 * - `stored`: the limits are stored now (by this call or another) and nothing needs publishing:
 *   read the row again and push;
 * - `push-defaults`: the LB has no config to adopt; push what the console builds (its defaults);
 * - `wait`: not read for a passing reason; push nothing yet, retry on the loop's backoff. */
export type BeforePush = { kind: "adopted" } | { kind: "stored" } | { kind: "push-defaults"; reason: string } | { kind: "wait"; reason: string };

export interface SettingsAdoptionDeps {
  store: Store;
  log: Logger;
  actor: Actor;
  readConfig: RunningConfigReader;
}

export class SettingsAdoption {
  /** Why an LB's config could not be adopted (a `none` answer), for the lb.limits-defaults audit. */
  private readonly notAdopted = new Map<string, string>();

  constructor(private readonly deps: SettingsAdoptionDeps) {}

  /** For the health probe: adopts `lb`'s running settings if the console stores none yet; true when
   * it did (the caller publishes). An LB that runs a console config gets the defaults stored
   * (false: the config the console builds is unchanged). Failures are logged and retried at the
   * next probe, never thrown into the probe. */
  async adopt(lb: LoadBalancerRow): Promise<boolean> {
    try {
      return (await this.beforePush(lb)).kind === "adopted";
    } catch (error) {
      this.deps.log.warn({ lbId: lb.id, err: error }, "LB's limits not stored; tried again at the next probe");
      return false;
    }
  }

  /** For the push loop, before it pushes to `lb` (whose limits_json is null). Throws only when the
   * console's database fails. */
  async beforePush(lb: LoadBalancerRow): Promise<BeforePush> {
    const { store, actor, log } = this.deps;
    if (lb.limitsJson !== null) return { kind: "stored" };
    if (lb.ackedVersion > 0) {
      if (await recordConsoleDefaults(store, actor, lb.id, this.notAdopted.get(lb.id) ?? null)) {
        this.notAdopted.delete(lb.id);
        log.info({ lbId: lb.id, ackedVersion: lb.ackedVersion }, "LB runs the console's config: its limits are stored as the console's defaults");
      }
      return { kind: "stored" };
    }
    const running = await this.deps.readConfig({ id: lb.id, adminBase: lb.adminUrl ?? lb.url });
    if (running.kind === "unavailable") {
      log.debug({ lbId: lb.id, reason: running.reason }, "LB's running config not read; asked again before pushing");
      return { kind: "wait", reason: running.reason };
    }
    if (running.kind === "none") {
      this.notAdopted.set(lb.id, running.reason);
      return { kind: "push-defaults", reason: running.reason };
    }
    if (await adoptRunningSettings(store, actor, lb.id, running.config)) {
      log.info({ lbId: lb.id, fromVersion: running.config.version }, "adopted the limits the LB runs");
      return { kind: "adopted" };
    }
    // An operator's edit or another adoption stored limits first, or the LB acknowledged a push
    // meanwhile: the caller reads the row again.
    return { kind: "stored" };
  }
}
