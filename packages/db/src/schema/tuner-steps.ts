import { index, integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { tunerRuns } from "./tuner-runs";

/** One evaluated candidate (or incumbent re-measurement) of a tuner run. */
export const tunerSteps = sqliteTable(
  "tuner_steps",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    runId: integer("run_id")
      .notNull()
      .references(() => tunerRuns.id, { onDelete: "cascade" }),
    step: integer("step").notNull(),
    weightRtt: real("weight_rtt").notNull(),
    weightQueue: real("weight_queue").notNull(),
    fitnessP95TtftMs: real("fitness_p95_ttft_ms"),
    sigma: real("sigma").notNull(),
    accepted: integer("accepted", { mode: "boolean" }).notNull(),
    /** Null when the guardrails passed; otherwise which guardrail rejected the candidate. */
    guardrail: text("guardrail"),
    /** candidate | incumbent | converged | manual ... as reported by the tuner. */
    kind: text("kind").notNull(),
    configVersion: integer("config_version"),
    /** A/B trials: the trial's evidence and decision (the tuner's TrialReport) as JSON; null in paper mode. */
    trialJson: text("trial_json"),
    at: integer("at").notNull(),
  },
  (table) => [index("tuner_steps_run").on(table.runId, table.step)],
);

export type TunerStepRow = typeof tunerSteps.$inferSelect;
