// Test harness: a ConsoleRuntime on a temporary SQLite file, cleaned up by close().
import "server-only";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import { openDb } from "@meridian/db";
import { findRepoRoot } from "../../env";
import { ConsoleRuntime, type RuntimeOptions } from "../runtime/runtime";
import type { Actor } from "../audit-trail";

/** The LB token every test LB gets unless a test asks for real random ones (`newLbToken`). */
export const TEST_TOKEN = `mlt_${"h".repeat(43)}`;
/** The machine token /api/entrypoints accepts in tests. */
export const ENTRYPOINTS_TOKEN = "test-entrypoints-token";
export const OPERATOR: Actor = { username: "admin", role: "operator" };

export interface Harness {
  rt: ConsoleRuntime;
  dir: string;
  close(): void;
}

/** `log`: a logger to capture what the runtime logs (default: silent). */
export function createHarness(options: Partial<RuntimeOptions> = {}, log?: Logger): Harness {
  const dir = mkdtempSync(join(tmpdir(), "meridian-console-"));
  const db = openDb(join(dir, "console.db"));
  const rt = new ConsoleRuntime(
    db,
    {
      entrypointsTokenSha256: createHash("sha256").update(ENTRYPOINTS_TOKEN).digest("hex"),
      newLbToken: () => TEST_TOKEN,
      repoRoot: findRepoRoot(),
      healthIntervalMs: 60_000,
      failoverAfter: 2,
      autoFailover: true,
      sessionTtlMs: 3_600_000,
      traceDirs: [],
      probeTimeoutMs: 1_000,
      ...options,
    },
    log,
  );
  rt.migrate();
  return {
    rt,
    dir,
    close() {
      void rt.stop();
      db.$client.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes. The bound only stops a
 * test that would otherwise hang; it is generous so a loaded machine does not fail a correct run. */
export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 15_000, what = "condition"): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
