// The audit page's query. Rows are written by recordAudit (../audit-trail.ts), inside the same
// transaction as the change they record.
import "server-only";
import { and, desc, eq, like } from "drizzle-orm";
import { auditLog } from "@meridian/db";
import type { ServiceRuntime } from "./context";

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
