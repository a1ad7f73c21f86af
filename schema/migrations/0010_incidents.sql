CREATE TABLE "incidents" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"rule" text NOT NULL,
	"severity" text NOT NULL,
	"state" text NOT NULL,
	"service_code" text NOT NULL,
	"task_id" text,
	"signal" text NOT NULL,
	"summary" text NOT NULL,
	"value" double precision,
	"threshold" double precision,
	"started_at" timestamp with time zone NOT NULL,
	"opened_at" timestamp with time zone NOT NULL,
	"acknowledged_at" timestamp with time zone,
	"acknowledged_by" text,
	"note" text,
	"resolved_at" timestamp with time zone,
	"resolution" text
);
--> statement-breakpoint
CREATE UNIQUE INDEX "incidents_open_idx" ON "incidents" USING btree ("rule","service_code",coalesce("task_id", '')) WHERE "incidents"."state" <> 'RESOLVED';--> statement-breakpoint
CREATE INDEX "incidents_code_idx" ON "incidents" USING btree ("service_code","id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "incidents_task_idx" ON "incidents" USING btree ("service_code","task_id","id" DESC NULLS LAST) WHERE "incidents"."task_id" is not null;