-- tuner_runs.lb_id becomes nullable (null: the fleet's run). SQLite changes a column's NOT NULL only by
-- rebuilding the table. drizzle-kit's rebuild (PRAGMA foreign_keys=OFF, then DROP TABLE tuner_runs) is
-- edited by hand: drizzle's migrator runs every migration inside one transaction, where that PRAGMA
-- does nothing, so dropping tuner_runs would cascade-delete every tuner_steps row. Both tables are
-- rebuilt instead, the new steps table referencing the new runs table: each old table is dropped once
-- nothing references it, and renaming the new runs table rewrites the new steps table's reference.
-- packages/db/src/migrations.test.ts migrates a database holding runs and steps through this file.
CREATE TABLE `__new_tuner_runs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`lb_id` text,
	`mode` text DEFAULT 'online' NOT NULL,
	`running` integer DEFAULT false NOT NULL,
	`settings_json` text NOT NULL,
	`state_json` text,
	`converged` integer DEFAULT false NOT NULL,
	`started_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`ended_at` integer,
	FOREIGN KEY (`lb_id`) REFERENCES `load_balancers`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_tuner_runs`("id", "lb_id", "mode", "running", "settings_json", "state_json", "converged", "started_at", "updated_at", "ended_at") SELECT "id", "lb_id", "mode", "running", "settings_json", "state_json", "converged", "started_at", "updated_at", "ended_at" FROM `tuner_runs`;--> statement-breakpoint
CREATE TABLE `__new_tuner_steps` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`run_id` integer NOT NULL,
	`step` integer NOT NULL,
	`weight_rtt` real NOT NULL,
	`weight_queue` real NOT NULL,
	`fitness_p95_ttft_ms` real,
	`sigma` real NOT NULL,
	`accepted` integer NOT NULL,
	`guardrail` text,
	`kind` text NOT NULL,
	`config_version` integer,
	`trial_json` text,
	`at` integer NOT NULL,
	FOREIGN KEY (`run_id`) REFERENCES `__new_tuner_runs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_tuner_steps`("id", "run_id", "step", "weight_rtt", "weight_queue", "fitness_p95_ttft_ms", "sigma", "accepted", "guardrail", "kind", "config_version", "trial_json", "at") SELECT "id", "run_id", "step", "weight_rtt", "weight_queue", "fitness_p95_ttft_ms", "sigma", "accepted", "guardrail", "kind", "config_version", "trial_json", "at" FROM `tuner_steps`;--> statement-breakpoint
DROP TABLE `tuner_steps`;--> statement-breakpoint
DROP TABLE `tuner_runs`;--> statement-breakpoint
ALTER TABLE `__new_tuner_runs` RENAME TO `tuner_runs`;--> statement-breakpoint
ALTER TABLE `__new_tuner_steps` RENAME TO `tuner_steps`;--> statement-breakpoint
CREATE INDEX `tuner_runs_lb` ON `tuner_runs` (`lb_id`);--> statement-breakpoint
CREATE INDEX `tuner_steps_run` ON `tuner_steps` (`run_id`,`step`);
