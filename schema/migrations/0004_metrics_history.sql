-- Hand-edited after drizzle-kit generate: "task_samples" is range-partitioned by "at" (drizzle-kit
-- cannot declare it). Its partitions are created ahead by the gateway as samples arrive and
-- dropped whole by retention (src/storage/sample.partitions.ts); its indexes are declared on the
-- parent, so each partition gets them. The rollups and "task_live" are updated in place by every
-- answer: a fillfactor of 70 leaves room on each page for those updates to stay HOT. Only new
-- tables: nothing existing is touched.
CREATE TABLE "service_metrics_hour" (
	"service_code" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"samples" integer NOT NULL,
	"live_tasks_sum" bigint NOT NULL,
	"live_tasks_max" integer NOT NULL,
	"viewers_sum" bigint NOT NULL,
	"viewers_max" integer NOT NULL,
	"input_bytes" bigint NOT NULL,
	"input_seconds" double precision NOT NULL,
	CONSTRAINT "service_metrics_hour_service_code_at_pk" PRIMARY KEY("service_code","at")
) WITH (fillfactor = 70);
--> statement-breakpoint
CREATE TABLE "service_metrics_minute" (
	"service_code" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"samples" integer NOT NULL,
	"live_tasks_sum" bigint NOT NULL,
	"live_tasks_max" integer NOT NULL,
	"viewers_sum" bigint NOT NULL,
	"viewers_max" integer NOT NULL,
	"input_bytes" bigint NOT NULL,
	"input_seconds" double precision NOT NULL,
	CONSTRAINT "service_metrics_minute_service_code_at_pk" PRIMARY KEY("service_code","at")
) WITH (fillfactor = 70);
--> statement-breakpoint
CREATE TABLE "task_live" (
	"service_code" text NOT NULL,
	"task_id" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"listed" boolean NOT NULL,
	"viewers" integer NOT NULL,
	"peak_viewers" integer NOT NULL,
	"input_bytes" bigint,
	"output_bytes" bigint,
	"still_samples" integer NOT NULL,
	"health" text NOT NULL,
	"health_since" timestamp with time zone NOT NULL,
	"first_listed_at" timestamp with time zone NOT NULL,
	"left_at" timestamp with time zone,
	"start_checked" boolean NOT NULL,
	"end_checked" boolean NOT NULL,
	"missing_start_at" timestamp with time zone,
	"missing_end_at" timestamp with time zone,
	CONSTRAINT "task_live_service_code_task_id_pk" PRIMARY KEY("service_code","task_id")
) WITH (fillfactor = 70);
--> statement-breakpoint
CREATE TABLE "task_metrics_hour" (
	"service_code" text NOT NULL,
	"task_id" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"samples" integer NOT NULL,
	"viewers_sum" bigint NOT NULL,
	"viewers_max" integer NOT NULL,
	"input_bytes" bigint NOT NULL,
	"input_seconds" double precision NOT NULL,
	"output_bytes" bigint NOT NULL,
	"output_seconds" double precision NOT NULL,
	CONSTRAINT "task_metrics_hour_service_code_task_id_at_pk" PRIMARY KEY("service_code","task_id","at")
) WITH (fillfactor = 70);
--> statement-breakpoint
CREATE TABLE "task_metrics_minute" (
	"service_code" text NOT NULL,
	"task_id" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"samples" integer NOT NULL,
	"viewers_sum" bigint NOT NULL,
	"viewers_max" integer NOT NULL,
	"input_bytes" bigint NOT NULL,
	"input_seconds" double precision NOT NULL,
	"output_bytes" bigint NOT NULL,
	"output_seconds" double precision NOT NULL,
	CONSTRAINT "task_metrics_minute_service_code_task_id_at_pk" PRIMARY KEY("service_code","task_id","at")
) WITH (fillfactor = 70);
--> statement-breakpoint
CREATE TABLE "task_samples" (
	"service_code" text NOT NULL,
	"task_id" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"viewers" integer NOT NULL,
	"input_bytes" bigint,
	"output_bytes" bigint,
	"input_rate" double precision,
	"output_rate" double precision,
	"outputs" jsonb NOT NULL
) PARTITION BY RANGE ("at");
--> statement-breakpoint
CREATE INDEX "service_metrics_hour_at_idx" ON "service_metrics_hour" USING btree ("at");--> statement-breakpoint
CREATE INDEX "service_metrics_minute_at_idx" ON "service_metrics_minute" USING btree ("at");--> statement-breakpoint
CREATE INDEX "task_live_open_idx" ON "task_live" USING btree ("service_code") WHERE "task_live"."listed" or not "task_live"."start_checked" or not "task_live"."end_checked";--> statement-breakpoint
CREATE INDEX "task_metrics_hour_at_idx" ON "task_metrics_hour" USING btree ("at");--> statement-breakpoint
CREATE INDEX "task_metrics_minute_at_idx" ON "task_metrics_minute" USING btree ("at");--> statement-breakpoint
CREATE INDEX "task_samples_task_at_idx" ON "task_samples" USING btree ("service_code","task_id","at");--> statement-breakpoint
CREATE INDEX "task_samples_code_at_idx" ON "task_samples" USING btree ("service_code","at");