// Offline experiments (the simulator) for the experiments page.
import "server-only";
import { eq } from "drizzle-orm";
import { type Actor, recordAudit } from "../audit-trail";
import { notFound } from "../errors";
import type { ExperimentParams } from "../runtime/experiment-runner";
import type { ServiceRuntime } from "./context";

export async function listTraces(rt: ServiceRuntime) {
  return await rt.experiments.traces();
}

/** The run's row and its audit row land in one transaction before the simulator starts: a refused
 * audit row starts nothing, so the operator's retry does not run it twice. */
export async function runExperiment(rt: ServiceRuntime, actor: Actor, input: ExperimentParams): Promise<{ id: string }> {
  const id = await rt.experiments.start(input, actor.username, (tx, runId) => recordAudit(tx, actor, "experiment.run", `experiment:${runId}`, null, input));
  return { id };
}

export async function experimentStatus(rt: ServiceRuntime, input: { id: string }) {
  const { db, tables } = rt.store;
  const [row] = await db.select().from(tables.experiments).where(eq(tables.experiments.id, input.id)).limit(1);
  if (!row) throw notFound("experiment", input.id);
  return {
    id: row.id,
    name: row.name,
    state: row.state,
    progress: row.progress,
    params: JSON.parse(row.paramsJson) as ExperimentParams,
    result: row.resultJson ? (JSON.parse(row.resultJson) as unknown) : undefined,
    error: row.error ?? undefined,
    createdAt: row.createdAt,
    finishedAt: row.finishedAt,
  };
}

export async function listExperiments(rt: ServiceRuntime) {
  return (await rt.experiments.list()).map((row) => {
    const params = JSON.parse(row.paramsJson) as ExperimentParams;
    return {
      id: row.id,
      name: row.name,
      traceId: row.traceId,
      state: row.state,
      progress: row.progress,
      createdAt: row.createdAt,
      finishedAt: row.finishedAt,
      saved: row.saved,
      kind: params.kind ?? "compare",
      policies: params.kind === "grid" ? [`gorgo grid ${params.grid?.points ?? 7}×${params.grid?.points ?? 7}`] : params.policies,
      timeScale: params.timeScale,
    };
  });
}

export async function saveExperiment(rt: ServiceRuntime, actor: Actor, input: { id: string; name: string }): Promise<void> {
  await rt.store.transaction(async (tx) => {
    const { experiments } = tx.tables;
    const [before] = await tx.db.select().from(experiments).where(eq(experiments.id, input.id)).limit(1);
    if (!before) throw notFound("experiment", input.id);
    await tx.db.update(experiments).set({ name: input.name, saved: true }).where(eq(experiments.id, input.id));
    await recordAudit(tx, actor, "experiment.save", `experiment:${input.id}`, { name: before.name, saved: before.saved }, { name: input.name, saved: true });
  });
}

/** Live traffic of the last five minutes (TelemetryHub), to compare with an experiment's result. */
export function liveSummary(rt: ServiceRuntime) {
  return rt.telemetry.stats.summary();
}
