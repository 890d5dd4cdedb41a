ALTER TABLE "experiments" ADD COLUMN "runner" text;--> statement-breakpoint
ALTER TABLE "experiments" ADD COLUMN "runner_expires_at" bigint;