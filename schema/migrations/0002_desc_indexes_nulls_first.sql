DROP INDEX "callbacks_service_code_id_idx";--> statement-breakpoint
DROP INDEX "callbacks_task_id_id_idx";--> statement-breakpoint
DROP INDEX "callbacks_user_name_id_idx";--> statement-breakpoint
DROP INDEX "callbacks_type_id_idx";--> statement-breakpoint
DROP INDEX "callbacks_received_at_idx";--> statement-breakpoint
DROP INDEX "callbacks_service_created_at_idx";--> statement-breakpoint
DROP INDEX "tasks_sort_idx";--> statement-breakpoint
DROP INDEX "tasks_service_code_sort_idx";--> statement-breakpoint
DROP INDEX "tasks_status_sort_idx";--> statement-breakpoint
DROP INDEX "tasks_author_sort_idx";--> statement-breakpoint
DROP INDEX "users_service_code_id_idx";--> statement-breakpoint
CREATE INDEX "callbacks_service_code_id_idx" ON "callbacks" USING btree ("service_code","id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "callbacks_task_id_id_idx" ON "callbacks" USING btree ("task_id","id" DESC NULLS FIRST) WHERE "callbacks"."task_id" is not null;--> statement-breakpoint
CREATE INDEX "callbacks_user_name_id_idx" ON "callbacks" USING btree ("user_name","id" DESC NULLS FIRST) WHERE "callbacks"."user_name" is not null;--> statement-breakpoint
CREATE INDEX "callbacks_type_id_idx" ON "callbacks" USING btree ("type","id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "callbacks_received_at_idx" ON "callbacks" USING btree ("received_at" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "callbacks_service_created_at_idx" ON "callbacks" USING btree ("service_created_at" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "tasks_sort_idx" ON "tasks" USING btree ("sort_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "tasks_service_code_sort_idx" ON "tasks" USING btree ("service_code","sort_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "tasks_status_sort_idx" ON "tasks" USING btree ("status","sort_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "tasks_author_sort_idx" ON "tasks" USING btree ("author","sort_at" DESC NULLS FIRST,"id" DESC NULLS FIRST) WHERE "tasks"."author" is not null;--> statement-breakpoint
CREATE INDEX "users_service_code_id_idx" ON "users" USING btree ("service_code","id" DESC NULLS FIRST);