CREATE TABLE "archive_status" (
	"service_code" text PRIMARY KEY NOT NULL,
	"last_poll_at" timestamp with time zone,
	"last_success_at" timestamp with time zone,
	"last_error_at" timestamp with time zone,
	"last_error_kind" text,
	"last_error_message" text,
	"last_ret" integer,
	"file_count" integer,
	"consecutive_failures" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "recordings" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"service_code" text NOT NULL,
	"file_name" text NOT NULL,
	"task_id" text,
	"user_name" text,
	"url" text,
	"description" text,
	"location" text,
	"duration" double precision,
	"width" integer,
	"height" integer,
	"views" integer,
	"likes" integer,
	"recorded_at" timestamp with time zone,
	"from_callback" boolean DEFAULT false NOT NULL,
	"from_list" boolean DEFAULT false NOT NULL,
	"first_seen_at" timestamp with time zone NOT NULL,
	"sort_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "recordings_service_code_file_name_unique" ON "recordings" USING btree ("service_code","file_name");--> statement-breakpoint
CREATE INDEX "recordings_service_code_sort_idx" ON "recordings" USING btree ("service_code","sort_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "recordings_user_sort_idx" ON "recordings" USING btree ("service_code","user_name","sort_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "recordings_task_idx" ON "recordings" USING btree ("service_code","task_id") WHERE "recordings"."task_id" is not null;