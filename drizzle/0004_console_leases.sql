CREATE TABLE `console_leases` (
	`name` text PRIMARY KEY NOT NULL,
	`holder` text NOT NULL,
	`holder_url` text,
	`term` integer DEFAULT 0 NOT NULL,
	`expires_at` integer NOT NULL,
	`renewed_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `lb_configs` ADD `term` integer DEFAULT 0 NOT NULL;