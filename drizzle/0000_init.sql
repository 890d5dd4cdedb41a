CREATE TABLE `regions` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`display_name` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `regions_name_unique` ON `regions` (`name`);--> statement-breakpoint
CREATE TABLE `load_balancers` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`url` text NOT NULL,
	`admin_url` text,
	`region_id` text NOT NULL,
	`state` text DEFAULT 'healthy' NOT NULL,
	`policy` text DEFAULT 'gorgo' NOT NULL,
	`cross_region` text DEFAULT 'direct' NOT NULL,
	`weight_rtt` real DEFAULT 0.5 NOT NULL,
	`weight_queue` real DEFAULT 0.1 NOT NULL,
	`config_version` integer DEFAULT 0 NOT NULL,
	`acked_version` integer DEFAULT 0 NOT NULL,
	`failed_over_to` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`region_id`) REFERENCES `regions`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`failed_over_to`) REFERENCES `load_balancers`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `load_balancers_name_unique` ON `load_balancers` (`name`);--> statement-breakpoint
CREATE TABLE `replicas` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`url` text NOT NULL,
	`region_id` text NOT NULL,
	`engine` text DEFAULT 'sglang' NOT NULL,
	`model` text NOT NULL,
	`state` text DEFAULT 'enabled' NOT NULL,
	`home_lb_id` text,
	`rehomed_to_lb_id` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`region_id`) REFERENCES `regions`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`home_lb_id`) REFERENCES `load_balancers`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`rehomed_to_lb_id`) REFERENCES `load_balancers`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `replicas_name_unique` ON `replicas` (`name`);--> statement-breakpoint
CREATE TABLE `lb_configs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`lb_id` text NOT NULL,
	`version` integer NOT NULL,
	`json` text NOT NULL,
	`created_at` integer NOT NULL,
	`acknowledged_at` integer,
	FOREIGN KEY (`lb_id`) REFERENCES `load_balancers`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `lb_configs_lb_version` ON `lb_configs` (`lb_id`,`version`);--> statement-breakpoint
CREATE INDEX `lb_configs_lb` ON `lb_configs` (`lb_id`);--> statement-breakpoint
CREATE TABLE `tuner_runs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`lb_id` text NOT NULL,
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
CREATE INDEX `tuner_runs_lb` ON `tuner_runs` (`lb_id`);--> statement-breakpoint
CREATE TABLE `tuner_steps` (
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
	`at` integer NOT NULL,
	FOREIGN KEY (`run_id`) REFERENCES `tuner_runs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `tuner_steps_run` ON `tuner_steps` (`run_id`,`step`);--> statement-breakpoint
CREATE TABLE `observed_rtts` (
	`from_region` text NOT NULL,
	`to_region` text NOT NULL,
	`rtt_ms` real NOT NULL,
	`samples` integer DEFAULT 1 NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`from_region`, `to_region`)
);
--> statement-breakpoint
CREATE TABLE `entrypoints` (
	`region_id` text PRIMARY KEY NOT NULL,
	`lb_id` text NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`region_id`) REFERENCES `regions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`lb_id`) REFERENCES `load_balancers`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `audit_log` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`at` integer NOT NULL,
	`actor` text NOT NULL,
	`action` text NOT NULL,
	`target` text NOT NULL,
	`before` text,
	`after` text
);
--> statement-breakpoint
CREATE INDEX `audit_log_at` ON `audit_log` (`at`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`username` text NOT NULL,
	`role` text NOT NULL,
	`password_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_username_unique` ON `users` (`username`);--> statement-breakpoint
CREATE TABLE `sessions` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`user_id` integer NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `sessions_user` ON `sessions` (`user_id`);--> statement-breakpoint
CREATE TABLE `experiments` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text,
	`trace_id` text NOT NULL,
	`params_json` text NOT NULL,
	`state` text NOT NULL,
	`progress` real DEFAULT 0 NOT NULL,
	`result_json` text,
	`error` text,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`finished_at` integer,
	`saved` integer DEFAULT false NOT NULL
);
