ALTER TABLE `load_balancers` ADD `trial_json` text;--> statement-breakpoint
ALTER TABLE `tuner_steps` ADD `trial_json` text;