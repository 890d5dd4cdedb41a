import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { TUNER_MODES } from "@meridian/tuner";
import { loadBalancers } from "./load-balancers";

/** One tuner lifetime per LB (a reset starts a new run). `stateJson` is the serialised EsTuner state,
 * rewritten after every step so that a console restart resumes where it stopped. */
export const tunerRuns = sqliteTable(
  "tuner_runs",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    lbId: text("lb_id")
      .notNull()
      .references(() => loadBalancers.id, { onDelete: "cascade" }),
    mode: text("mode", { enum: TUNER_MODES }).notNull().default("online"),
    running: integer("running", { mode: "boolean" }).notNull().default(false),
    /** Bounds, window, hop, evaluation and guardrails as JSON. */
    settingsJson: text("settings_json").notNull(),
    stateJson: text("state_json"),
    converged: integer("converged", { mode: "boolean" }).notNull().default(false),
    startedAt: integer("started_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    /** Null while this is the LB's current run. */
    endedAt: integer("ended_at"),
  },
  (table) => [index("tuner_runs_lb").on(table.lbId)],
);

export type TunerRunRow = typeof tunerRuns.$inferSelect;
