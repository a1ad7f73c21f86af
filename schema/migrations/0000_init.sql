CREATE TABLE "callbacks" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"dedupe_key" text NOT NULL,
	"type" integer NOT NULL,
	"service_code" text NOT NULL,
	"task_id" text,
	"user_name" text,
	"vs_id" text,
	"service_created_at" timestamp with time zone,
	"received_at" timestamp with time zone NOT NULL,
	"last_delivered_at" timestamp with time zone NOT NULL,
	"deliveries" integer DEFAULT 1 NOT NULL,
	"fields" jsonb NOT NULL,
	"method" text NOT NULL,
	"path" text NOT NULL,
	"query" text DEFAULT '' NOT NULL,
	"body" "bytea" NOT NULL,
	"headers" jsonb NOT NULL,
	"remote_address" text,
	"signature" text NOT NULL,
	"signature_error" text
);
--> statement-breakpoint
CREATE TABLE "refusals" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"received_at" timestamp with time zone NOT NULL,
	"reason" text NOT NULL,
	"message" text NOT NULL,
	"method" text NOT NULL,
	"path" text NOT NULL,
	"query" text DEFAULT '' NOT NULL,
	"body" "bytea" NOT NULL,
	"body_size" integer NOT NULL,
	"headers" jsonb NOT NULL,
	"remote_address" text,
	"service_code" text,
	"type" text
);
--> statement-breakpoint
CREATE UNIQUE INDEX "callbacks_dedupe_key_unique" ON "callbacks" USING btree ("dedupe_key");--> statement-breakpoint
CREATE INDEX "callbacks_service_code_id_idx" ON "callbacks" USING btree ("service_code","id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "callbacks_task_id_id_idx" ON "callbacks" USING btree ("task_id","id" DESC NULLS LAST) WHERE "callbacks"."task_id" is not null;--> statement-breakpoint
CREATE INDEX "callbacks_user_name_id_idx" ON "callbacks" USING btree ("user_name","id" DESC NULLS LAST) WHERE "callbacks"."user_name" is not null;--> statement-breakpoint
CREATE INDEX "callbacks_type_id_idx" ON "callbacks" USING btree ("type","id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "callbacks_received_at_idx" ON "callbacks" USING btree ("received_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "callbacks_service_created_at_idx" ON "callbacks" USING btree ("service_created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "refusals_received_at_idx" ON "refusals" USING btree ("received_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "refusals_reason_idx" ON "refusals" USING btree ("reason","id" DESC NULLS LAST);