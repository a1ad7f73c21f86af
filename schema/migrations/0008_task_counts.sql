CREATE TABLE "task_counts" (
	"service_code" text NOT NULL,
	"status" text NOT NULL,
	"n" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "task_counts_key_idx" ON "task_counts" USING btree ("service_code","status");--> statement-breakpoint
-- Statement-level triggers see a statement's rows once (an upsert of a thousand tasks appends a
-- row per code and status it moved, not a thousand), and only append: nothing here locks a row
-- another writer needs.
CREATE FUNCTION "task_counts_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO "task_counts" ("service_code", "status", "n")
	SELECT "service_code", "status", count(*) FROM "added" GROUP BY 1, 2;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION "task_counts_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO "task_counts" ("service_code", "status", "n")
	SELECT "service_code", "status", sum("n") FROM (
		SELECT "service_code", "status", 1 AS "n" FROM "after"
		UNION ALL
		SELECT "service_code", "status", -1 FROM "before"
	) AS "moves"
	GROUP BY 1, 2
	HAVING sum("n") <> 0;
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
CREATE TRIGGER "tasks_counted_update" AFTER UPDATE ON "tasks" REFERENCING OLD TABLE AS "before" NEW TABLE AS "after" FOR EACH STATEMENT EXECUTE FUNCTION "task_counts_moved"();
--> statement-breakpoint
CREATE TRIGGER "tasks_counted_delete" AFTER DELETE ON "tasks" REFERENCING OLD TABLE AS "removed" FOR EACH STATEMENT EXECUTE FUNCTION "task_counts_removed"();
--> statement-breakpoint
-- The tasks already kept, counted once; the triggers count every change from here on. Creating a
-- trigger waits for the writers of "tasks" under way and holds new ones off until the migration
-- commits, so no row is counted twice or missed.
INSERT INTO "task_counts" ("service_code", "status", "n")
SELECT "service_code", "status", count(*) FROM "tasks" GROUP BY 1, 2;
