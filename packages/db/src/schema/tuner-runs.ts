import { TUNER_MODES } from "@meridian/tuner";
import { col, defineTable } from "./columns";
import { loadBalancersTable } from "./load-balancers";

/** One tuner lifetime per LB (a reset starts a new run), or the fleet's: a run with no LB is one tuner
 * that sets the weights of every LB whose policy reads them (the fleet scope; while it is open, the
 * LBs' own runs stand aside). `stateJson` is the serialised EsTuner state, rewritten after every step
 * so that a console restart resumes where it stopped. */
export const tunerRunsTable = defineTable(
  "tuner_runs",
  {
    id: col.id("id"),
    /** Null for the fleet's run. */
    lbId: col.text("lb_id").references(() => loadBalancersTable, "id", { onDelete: "cascade" }),
    mode: col.text("mode", { enum: TUNER_MODES }).notNull().default("online"),
    running: col.bool("running").notNull().default(false),
    /** Bounds, window, hop, evaluation and guardrails as JSON. */
    settingsJson: col.text("settings_json").notNull(),
    stateJson: col.text("state_json"),
    converged: col.bool("converged").notNull().default(false),
    startedAt: col.epochMs("started_at").notNull(),
    updatedAt: col.epochMs("updated_at").notNull(),
    /** Null while this is the LB's current run. */
    endedAt: col.epochMs("ended_at"),
  },
  { indexes: [{ name: "tuner_runs_lb", on: ["lbId"] }] },
);
export const tunerRuns = tunerRunsTable.sqlite;

export type TunerRunRow = typeof tunerRuns.$inferSelect;
