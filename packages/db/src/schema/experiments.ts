import { col, defineTable } from "./columns";

/** Offline simulator comparisons (meridian-sim compare --json). `name` is set when an operator saves one. */
export const experimentsTable = defineTable("experiments", {
  id: col.text("id").primaryKey(),
  name: col.text("name"),
  traceId: col.text("trace_id").notNull(),
  /** The run's parameters (window, timeScale, policies) as JSON. */
  paramsJson: col.text("params_json").notNull(),
  state: col.text("state", { enum: ["running", "done", "failed"] }).notNull(),
  progress: col.real("progress").notNull().default(0),
  resultJson: col.text("result_json"),
  error: col.text("error"),
  createdBy: col.text("created_by").notNull(),
  createdAt: col.epochMs("created_at").notNull(),
  finishedAt: col.epochMs("finished_at"),
  saved: col.bool("saved").notNull().default(false),
  /** The console process running the simulation (its leadership id), while it runs. */
  runner: col.text("runner"),
  /** Until when the runner vouches for the run: it renews this while the simulation runs. A row
   * still "running" after it passed lost its console (crash, kill) and is marked interrupted. */
  runnerExpiresAt: col.epochMs("runner_expires_at"),
});
export const experiments = experimentsTable.sqlite;

export type ExperimentRow = typeof experiments.$inferSelect;
