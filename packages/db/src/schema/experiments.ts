import { integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Offline simulator comparisons (meridian-sim compare --json). `name` is set when an operator saves one. */
export const experiments = sqliteTable("experiments", {
  id: text("id").primaryKey(),
  name: text("name"),
  traceId: text("trace_id").notNull(),
  /** The run's parameters (window, timeScale, policies) as JSON. */
  paramsJson: text("params_json").notNull(),
  state: text("state", { enum: ["running", "done", "failed"] }).notNull(),
  progress: real("progress").notNull().default(0),
  resultJson: text("result_json"),
  error: text("error"),
  createdBy: text("created_by").notNull(),
  createdAt: integer("created_at").notNull(),
  finishedAt: integer("finished_at"),
  saved: integer("saved", { mode: "boolean" }).notNull().default(false),
});

export type ExperimentRow = typeof experiments.$inferSelect;
