ALTER TABLE "load_balancers" ADD COLUMN "limits_json" text;--> statement-breakpoint
ALTER TABLE "replicas" ADD COLUMN "max_concurrency" integer;--> statement-breakpoint
ALTER TABLE "replicas" ADD COLUMN "cache_capacity_tokens" integer;