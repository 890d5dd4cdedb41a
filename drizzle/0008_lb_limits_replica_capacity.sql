ALTER TABLE `load_balancers` ADD `limits_json` text;--> statement-breakpoint
ALTER TABLE `replicas` ADD `max_concurrency` integer;--> statement-breakpoint
ALTER TABLE `replicas` ADD `cache_capacity_tokens` integer;