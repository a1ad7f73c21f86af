CREATE TABLE "actions" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"service_code" text NOT NULL,
	"task_id" text,
	"user_name" text,
	"text" text,
	"from_name" text,
	"requested_by" text,
	"reason" text,
	"args_hash" text NOT NULL,
	"idempotency_key" text,
	"key_scope" text NOT NULL,
	"state" text NOT NULL,
	"refusal" text,
	"ret" integer,
	"message" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"requested_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE UNIQUE INDEX "actions_idempotency_idx" ON "actions" USING btree ("key_scope","idempotency_key");--> statement-breakpoint
CREATE INDEX "actions_requested_at_idx" ON "actions" USING btree ("requested_at");--> statement-breakpoint
CREATE INDEX "actions_task_idx" ON "actions" USING btree ("service_code","task_id","id" DESC NULLS LAST);