// The audit page's query. Rows are written by recordAudit (../audit-trail.ts), inside the same
// transaction as the change they record.
import "server-only";
import { type AnyColumn, and, desc, eq, type SQL, sql } from "drizzle-orm";
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

/** A case-insensitive prefix match on both stores: SQLite's LIKE ignores ASCII case, PostgreSQL's
 * does not, so both sides are lowered. The prefix is literal: LIKE's wildcards in it are escaped
 * (a filter of "_" matched every action). */
function startsWith(column: AnyColumn, prefix: string): SQL {
  const literal = prefix.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
  return sql`lower(${column}) like ${`${literal}%`} escape '\\'`;
}

/** Newest first. `action` and `target` match as prefixes ("lb." finds every LB action). */
export async function listAudit(rt: ServiceRuntime, query: AuditQuery): Promise<AuditEntry[]> {
  const { db, tables } = rt.store;
  const { auditLog } = tables;
  const filters = [
    query.actor ? eq(auditLog.actor, query.actor) : undefined,
    query.action ? startsWith(auditLog.action, query.action) : undefined,
    query.target ? startsWith(auditLog.target, query.target) : undefined,
  ].filter((f) => f !== undefined);
  const rows = await db
    .select()
    .from(auditLog)
    .where(filters.length > 0 ? and(...filters) : undefined)
    .orderBy(desc(auditLog.id))
    .limit(query.limit ?? 200);
  return rows.map((row) => ({ ...row, before: parseJson(row.before), after: parseJson(row.after) }));
}
