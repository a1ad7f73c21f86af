DROP INDEX "recordings_user_sort_idx";--> statement-breakpoint
CREATE INDEX "recordings_user_name_sort_idx" ON "recordings" USING btree ("user_name","sort_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);