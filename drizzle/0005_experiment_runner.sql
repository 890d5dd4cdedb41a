ALTER TABLE `experiments` ADD `runner` text;--> statement-breakpoint
ALTER TABLE `experiments` ADD `runner_expires_at` integer;