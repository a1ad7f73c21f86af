CREATE TABLE "task_counts" (
	"service_code" text NOT NULL,
	"status" text NOT NULL,
	"n" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "task_counts_key_idx" ON "task_counts" USING btree ("service_code","status");--> statement-breakpoint
-- The triggers only append: nothing here locks a row another writer needs. Inserts and deletes
-- are counted per statement (a thousand new tasks of one code append one row).
CREATE FUNCTION "task_counts_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO "task_counts" ("service_code", "status", "n")
	SELECT "service_code", "status", count(*) FROM "added" GROUP BY 1, 2;
	RETURN NULL;
END $$;
--> statement-breakpoint
-- A status moved: most updates of a task (a new callback folded, a poll) move none, and the WHEN
-- of its trigger skips those without calling anything, where a statement's transition tables
-- would copy every updated row.
CREATE FUNCTION "task_counts_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO "task_counts" ("service_code", "status", "n")
	VALUES (OLD."service_code", OLD."status", -1), (NEW."service_code", NEW."status", 1);
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION "task_counts_removed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO "task_counts" ("service_code", "status", "n")
	SELECT "service_code", "status", -count(*) FROM "removed" GROUP BY 1, 2;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "tasks_counted_insert" AFTER INSERT ON "tasks" REFERENCING NEW TABLE AS "added" FOR EACH STATEMENT EXECUTE FUNCTION "task_counts_added"();
--> statement-breakpoint
CREATE TRIGGER "tasks_counted_update" AFTER UPDATE OF "service_code", "status" ON "tasks" FOR EACH ROW
WHEN (OLD."service_code" IS DISTINCT FROM NEW."service_code" OR OLD."status" IS DISTINCT FROM NEW."status") EXECUTE FUNCTION "task_counts_moved"();
--> statement-breakpoint
CREATE TRIGGER "tasks_counted_delete" AFTER DELETE ON "tasks" REFERENCING OLD TABLE AS "removed" FOR EACH STATEMENT EXECUTE FUNCTION "task_counts_removed"();
--> statement-breakpoint
-- The tasks already kept, counted once; the triggers count every change from here on. Creating a
-- trigger waits for the writers of "tasks" under way and holds new ones off until the migration
-- commits, so no row is counted twice or missed.
INSERT INTO "task_counts" ("service_code", "status", "n")
SELECT "service_code", "status", count(*) FROM "tasks" GROUP BY 1, 2;
