// The audit log: every mutation writes one row inside the same transaction as the change.
import { and, desc, eq, like } from "drizzle-orm";
import { auditLog, type Db } from "@meridian/db";
import type { Actor, ServiceRuntime } from "./context";

type Tx = Pick<Db, "insert">;

export function recordAudit(
  tx: Tx,
  actor: Actor,
  action: string,
  target: string,
  before: unknown,
  after: unknown,
  at: number = Date.now(),
): void {
  tx.insert(auditLog)
    .values({
      at,
      actor: actor.username,
      action,
      target,
      before: before === undefined || before === null ? null : JSON.stringify(before),
      after: after === undefined || after === null ? null : JSON.stringify(after),
    })
    .run();
}

export interface AuditQuery {
  actor?: string | undefined;
  action?: string | undefined;
  target?: string | undefined;
  limit?: number | undefined;
}

export interface AuditEntry {
  id: number;
  at: number;
  actor: string;
  action: string;
  target: string;
  before: unknown;
  after: unknown;
}

function parseJson(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Newest first. `action` and `target` match as prefixes ("lb." finds every LB action). */
export function listAudit(rt: ServiceRuntime, query: AuditQuery): AuditEntry[] {
  const filters = [
    query.actor ? eq(auditLog.actor, query.actor) : undefined,
    query.action ? like(auditLog.action, `${query.action}%`) : undefined,
    query.target ? like(auditLog.target, `${query.target}%`) : undefined,
  ].filter((f) => f !== undefined);
  const rows = rt.db
    .select()
    .from(auditLog)
    .where(filters.length > 0 ? and(...filters) : undefined)
    .orderBy(desc(auditLog.id))
    .limit(query.limit ?? 200)
    .all();
  return rows.map((row) => ({ ...row, before: parseJson(row.before), after: parseJson(row.after) }));
}
