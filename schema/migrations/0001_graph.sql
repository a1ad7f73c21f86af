CREATE TABLE "tasks" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"service_code" text NOT NULL,
	"task_id" text NOT NULL,
	"state" jsonb NOT NULL,
	"status" text NOT NULL,
	"end_reason" text,
	"author" text,
	"listed" boolean NOT NULL,
	"sort_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "upstream_status" (
	"service_code" text PRIMARY KEY NOT NULL,
	"last_poll_at" timestamp with time zone,
	"last_success_at" timestamp with time zone,
	"last_error_at" timestamp with time zone,
	"last_error_kind" text,
	"last_error_message" text,
	"last_ret" integer,
	"last_latency_ms" integer,
	"task_count" integer,
	"user_count" integer
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"service_code" text NOT NULL,
	"user_name" text NOT NULL,
	"state" jsonb NOT NULL,
	"online" boolean NOT NULL,
	"last_seen_at" timestamp with time zone,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "tasks_service_code_task_id_unique" ON "tasks" USING btree ("service_code","task_id");--> statement-breakpoint
CREATE INDEX "tasks_task_id_idx" ON "tasks" USING btree ("task_id");--> statement-breakpoint
CREATE INDEX "tasks_sort_idx" ON "tasks" USING btree ("sort_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "tasks_service_code_sort_idx" ON "tasks" USING btree ("service_code","sort_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "tasks_status_sort_idx" ON "tasks" USING btree ("status","sort_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "tasks_author_sort_idx" ON "tasks" USING btree ("author","sort_at" DESC NULLS LAST,"id" DESC NULLS LAST) WHERE "tasks"."author" is not null;--> statement-breakpoint
CREATE INDEX "tasks_listed_idx" ON "tasks" USING btree ("service_code") WHERE "tasks"."listed";--> statement-breakpoint
CREATE UNIQUE INDEX "users_service_code_user_name_unique" ON "users" USING btree ("service_code","user_name");--> statement-breakpoint
CREATE INDEX "users_service_code_id_idx" ON "users" USING btree ("service_code","id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "users_online_idx" ON "users" USING btree ("service_code") WHERE "users"."online";