import { col, defineTable } from "./columns";
import { tunerRunsTable } from "./tuner-runs";

/** One evaluated candidate (or incumbent re-measurement) of a tuner run. */
export const tunerStepsTable = defineTable(
  "tuner_steps",
  {
    id: col.id("id"),
    runId: col
      .int("run_id")
      .notNull()
      .references(() => tunerRunsTable, "id", { onDelete: "cascade" }),
    step: col.int("step").notNull(),
    weightRtt: col.real("weight_rtt").notNull(),
    weightQueue: col.real("weight_queue").notNull(),
    fitnessP95TtftMs: col.real("fitness_p95_ttft_ms"),
    sigma: col.real("sigma").notNull(),
    accepted: col.bool("accepted").notNull(),
    /** Null when the guardrails passed; otherwise which guardrail rejected the candidate. */
    guardrail: col.text("guardrail"),
    /** candidate | incumbent | converged | manual ... as reported by the tuner. */
    kind: col.text("kind").notNull(),
    configVersion: col.int("config_version"),
    /** A/B trials: the trial's evidence and decision (the tuner's TrialReport) as JSON; null in paper mode. */
    trialJson: col.text("trial_json"),
    at: col.epochMs("at").notNull(),
  },
  { indexes: [{ name: "tuner_steps_run", on: ["runId", "step"] }] },
);
export const tunerSteps = tunerStepsTable.sqlite;

export type TunerStepRow = typeof tunerSteps.$inferSelect;
