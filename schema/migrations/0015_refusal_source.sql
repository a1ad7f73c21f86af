ALTER TABLE "refusals" ADD COLUMN "source_key" text;--> statement-breakpoint
CREATE INDEX "refusals_source_idx" ON "refusals" USING btree ("source_key","received_at");