// Who acts, and the one way an action is written to the audit log. A leaf module: the runtime
// components (health monitor, failover, tuner) and the services both record actions, so this must
// import neither of them (docs: apps/console/README.md, "Runtime structure").
import "server-only";
import type { Queryable, UserRole } from "@meridian/db";

/** Who performed an action, as written to the audit log. System actors (health monitor, tuner) use
 * role "system". */
export interface Actor {
  username: string;
  role: UserRole | "system";
}

export const SYSTEM_HEALTH: Actor = { username: "system:health-monitor", role: "system" };
export const SYSTEM_SEED: Actor = { username: "system:seed", role: "system" };
export const SYSTEM_CREDENTIALS: Actor = { username: "system:credentials", role: "system" };
/** Repairs the console makes on its own at startup (e.g. homing replicas written without a home LB). */
export const SYSTEM_CONSOLE: Actor = { username: "system:console", role: "system" };

/** Writes one audit row; pass the transaction that makes the change, so both land or neither. */
export async function recordAudit(
  tx: Queryable,
  actor: Actor,
  action: string,
  target: string,
  before: unknown,
  after: unknown,
  at: number = Date.now(),
): Promise<void> {
  await tx.db.insert(tx.tables.auditLog).values({
    at,
    actor: actor.username,
    action,
    target,
    before: before === undefined || before === null ? null : JSON.stringify(before),
    after: after === undefined || after === null ? null : JSON.stringify(after),
  });
}
