// What every service function receives: the runtime (db + live services) and who is acting.
import type { UserRole } from "@meridian/db";
import type { ConsoleRuntime } from "../runtime/runtime";

export type ServiceRuntime = ConsoleRuntime;

/** Who performed an action, as written to the audit log. System actors (health monitor, tuner) use
 * role "system". */
export interface Actor {
  username: string;
  role: UserRole | "system";
}

export const SYSTEM_HEALTH: Actor = { username: "system:health-monitor", role: "system" };
export const SYSTEM_TUNER: Actor = { username: "system:tuner", role: "system" };
export const SYSTEM_SEED: Actor = { username: "system:seed", role: "system" };

/** The database or a transaction on it (both have the same query builders). */
export type DbLike = Pick<ServiceRuntime["db"], "select" | "insert" | "update" | "delete">;
