// Adopting an LB's running settings, once. Every config the console pushes replaces the LB's whole
// config, limits included, so an LB started from its own config file (say maxBodyBytes 32 MiB, a
// replica's maxConcurrency) would silently go back to the console's defaults at its first push.
// The rule: while the console stores no limits for an LB (load_balancers.limits_json is null: never
// set by an operator, never adopted), the leader reads the config the LB runs (GET /admin/config,
// once the LB proved it holds its token) and stores it as the console's own:
// - the LB's limits, only those that differ from the protocol's defaults (the rest stay defaults,
//   shown as such, and follow the protocol if it changes them);
// - a replica's maxConcurrency / cacheCapacityTokens the LB runs with, where the console stores none
//   for that replica (an operator's value is never overwritten).
// It is audited (lb.adopt-settings) and published like an operator's edit. After it the LB's limits
// are stored ("{}" when every one was a default), so nothing is adopted twice; an operator setting
// the limits first (on create or on the LBs page) means there is nothing to adopt.
// An LB that does not answer GET /admin/config is asked again at the next probe; until then the
// console's defaults are what it would push, and the LBs page says so.
// Why here, at the leader's state probe, and not at registration: a registered LB cannot answer the
// console before it is started with the token the console issues at registration.
import "server-only";
import { and, eq, isNull } from "drizzle-orm";
import type { Logger } from "pino";
import { request } from "undici";
import { type LbConfig, safeParseLbConfig } from "@meridian/protocol";
import type { LoadBalancerRow, Store } from "@meridian/db";
import { type Actor, recordAudit } from "../audit-trail";
import { differencesFromDefaults, limitsJson } from "../services/lbs-limits";
import type { LbAdminClient, LbEndpoint } from "./lb-admin-client";

/** The config an LB reports running, or null when it did not answer with one. */
export type RunningConfigReader = (lb: LbEndpoint) => Promise<LbConfig | null>;

const READ_TIMEOUT_MS = 5_000;

/** GET /admin/config with the LB's token (presented only once the LB proved it holds it). */
export function runningConfigReader(client: Pick<LbAdminClient, "auth">): RunningConfigReader {
  return async (lb) => {
    const base = lb.adminBase.replace(/\/+$/, "");
    const res = await request(`${base}/admin/config`, {
      headers: await client.auth(lb),
      headersTimeout: READ_TIMEOUT_MS,
      bodyTimeout: READ_TIMEOUT_MS,
      signal: AbortSignal.timeout(READ_TIMEOUT_MS),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) return null;
    const parsed = safeParseLbConfig(JSON.parse(text));
    return parsed.success ? parsed.data : null;
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
    const [lb] = await tx.db
      .update(loadBalancers)
      .set({ limitsJson: limitsJson(limits) })
      .where(and(eq(loadBalancers.id, lbId), isNull(loadBalancers.limitsJson)))
      .returning({ ackedVersion: loadBalancers.ackedVersion });
    if (!lb) return false;
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
      { limits: null },
      { limits, replicas: replicaChanges, fromVersion: running.version, lbAckedVersion: lb.ackedVersion },
    );
    return true;
  });
}

export interface SettingsAdoptionDeps {
  store: Store;
  log: Logger;
  actor: Actor;
  readConfig: RunningConfigReader;
}

export class SettingsAdoption {
  constructor(private readonly deps: SettingsAdoptionDeps) {}

  /** Adopts `lb`'s running settings if the console stores none yet; true when it did (the caller
   * publishes). A failure is logged and retried at the next probe, never thrown into the probe. */
  async adopt(lb: LoadBalancerRow): Promise<boolean> {
    if (lb.limitsJson !== null) return false;
    try {
      const running = await this.deps.readConfig({ id: lb.id, adminBase: lb.adminUrl ?? lb.url });
      if (running === null) return false;
      const adopted = await adoptRunningSettings(this.deps.store, this.deps.actor, lb.id, running);
      if (adopted) {
        // An LB that already acknowledged a console version runs the console's limits: adopting
        // them changes nothing it runs. Said in the log, as it may mean a first push came first.
        this.deps.log.info({ lbId: lb.id, fromVersion: running.version, ackedVersion: lb.ackedVersion }, "adopted the limits the LB runs");
      }
      return adopted;
    } catch (error) {
      this.deps.log.debug({ lbId: lb.id, err: error }, "LB's running config not read; its limits are adopted at a later probe");
      return false;
    }
  }
}
