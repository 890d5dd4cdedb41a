// What a service does once an operator's change has committed. The change is saved: its follow-ups
// (making the new LB's tuner, publishing the configs, resubscribing telemetry, forgetting what the
// console held about a deleted LB) are best effort. A follow-up that fails (the database refused a
// write a moment after the commit, another process took SQLite's lock, a PostgreSQL connection was
// lost) must not turn the operator's answer into an error: trpc/errors.ts answers a database error
// "nothing was changed, retry", and the retry would fail ("already exists") or repeat the change,
// and a token shown only in the answer would be lost. It is logged at error instead. The leader's
// rounds make most follow-ups again (the reconcile reloads missing tuners and republishes every round,
// the health monitor resubscribes telemetry every round). An audit row is never a follow-up: it is
// written in the change's own transaction (recordAudit), so a change is saved with its row or not at
// all; a row written after the commit that failed would leave a change no operator finds in the log.
import "server-only";
import type { ServiceRuntime } from "./context";

/** Runs each follow-up of the committed `change` in turn; a failed one is logged and the rest still run. */
export async function afterCommit(rt: Pick<ServiceRuntime, "log">, change: string, followUps: Record<string, () => unknown>): Promise<void> {
  for (const [step, run] of Object.entries(followUps)) {
    try {
      await run();
    } catch (error) {
      rt.log.error({ change, step, err: error }, "operator change saved, but a follow-up failed");
    }
  }
}

/** An operator's action that failed after (part of) it may have been saved: the answer says so
 * (trpc/errors.ts keeps this message) instead of "nothing was changed, retry". */
export class ChangeMaybeSavedError extends Error {
  readonly changeMaybeSaved = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ChangeMaybeSavedError";
  }
}

/** ChangeMaybeSavedError, also from another bundle's copy of this module (Next bundles the runtime apart from the routers). */
export function isChangeMaybeSaved(error: unknown): error is ChangeMaybeSavedError {
  return error instanceof Error && (error as { changeMaybeSaved?: unknown }).changeMaybeSaved === true;
}
