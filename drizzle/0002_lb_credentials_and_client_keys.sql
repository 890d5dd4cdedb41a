CREATE TABLE `lb_tokens` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`lb_id` text NOT NULL,
	`state` text NOT NULL,
	`key_id` text NOT NULL,
	`token` text NOT NULL,
	`created_at` integer NOT NULL,
	`retire_at` integer,
	FOREIGN KEY (`lb_id`) REFERENCES `load_balancers`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `lb_tokens_lb_state` ON `lb_tokens` (`lb_id`,`state`);--> statement-breakpoint
CREATE INDEX `lb_tokens_lb` ON `lb_tokens` (`lb_id`);--> statement-breakpoint
CREATE TABLE `lb_proofs` (
	`lb_id` text PRIMARY KEY NOT NULL,
	`admin_base` text NOT NULL,
	`key_id` text NOT NULL,
	`proven_at` integer NOT NULL,
	FOREIGN KEY (`lb_id`) REFERENCES `load_balancers`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `client_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`region_id` text NOT NULL,
	`name` text NOT NULL,
	`sha256` text NOT NULL,
	`created_at` integer NOT NULL,
	`created_by` text NOT NULL,
	`revoked_at` integer,
	`revoked_by` text,
	FOREIGN KEY (`region_id`) REFERENCES `regions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `client_keys_region` ON `client_keys` (`region_id`);--> statement-breakpoint
ALTER TABLE `regions` ADD `client_keys_required` integer DEFAULT false NOT NULL;