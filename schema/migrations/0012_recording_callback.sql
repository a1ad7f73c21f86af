CREATE TABLE "recording_missing" (
	"service_code" text NOT NULL,
	"task_id" text NOT NULL,
	"told_at" timestamp with time zone NOT NULL,
	CONSTRAINT "recording_missing_service_code_task_id_pk" PRIMARY KEY("service_code","task_id")
);
--> statement-breakpoint
ALTER TABLE "recordings" ADD COLUMN "output_index" integer;--> statement-breakpoint
ALTER TABLE "recordings" ADD COLUMN "tag" text;--> statement-breakpoint
ALTER TABLE "recordings" ADD COLUMN "path" text;--> statement-breakpoint
ALTER TABLE "recordings" ADD COLUMN "format" jsonb;--> statement-breakpoint
ALTER TABLE "recordings" ADD COLUMN "input_bytes" bigint;--> statement-breakpoint
ALTER TABLE "recordings" ADD COLUMN "http_output_bytes" bigint;--> statement-breakpoint
ALTER TABLE "recordings" ADD COLUMN "live_started_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "recordings" ADD COLUMN "received_at" timestamp with time zone;--> statement-breakpoint
-- Every type 2 the projection kept before the catalogue had its columns, into the catalogue: one
-- row per file, the callback's parts on a row 0011 already wrote. Values of an unexpected type are
-- left null rather than failing the migration.
INSERT INTO "recordings" AS r ("service_code", "file_name", "task_id", "user_name", "url", "duration", "width", "height",
  "output_index", "tag", "path", "format", "input_bytes", "http_output_bytes", "live_started_at", "received_at",
  "from_callback", "first_seen_at", "sort_at", "updated_at")
SELECT DISTINCT ON (s.c1, s.c2) s.c1, s.c2, s.c3, s.c4, s.c5, s.c6, s.c7, s.c8, s.c9, s.c10, s.c11, s.c12, s.c13, s.c14, s.c15, s.c16, s.c17, s.c18, s.c19, s.c20
FROM (SELECT t.service_code, e->>'fileName', t.task_id, t.author,
  CASE WHEN jsonb_typeof(e->'url') = 'string' THEN e->>'url' END,
  CASE WHEN jsonb_typeof(e->'duration') = 'number' THEN (e->>'duration')::float8 END,
  CASE WHEN jsonb_typeof(e->'width') = 'number' AND abs((e->>'width')::numeric) < 2147483648 THEN (e->>'width')::numeric::int END,
  CASE WHEN jsonb_typeof(e->'height') = 'number' AND abs((e->>'height')::numeric) < 2147483648 THEN (e->>'height')::numeric::int END,
  CASE WHEN jsonb_typeof(e->'outputIndex') = 'number' AND abs((e->>'outputIndex')::numeric) < 2147483648
    THEN (e->>'outputIndex')::numeric::int END,
  CASE WHEN jsonb_typeof(e->'tag') = 'string' THEN e->>'tag' END,
  CASE WHEN jsonb_typeof(e->'path') = 'string' THEN e->>'path' END,
  CASE WHEN jsonb_typeof(e->'format') = 'object' THEN e->'format' END,
  CASE WHEN jsonb_typeof(e->'inputBytes') = 'number' AND abs((e->>'inputBytes')::numeric) < 9007199254740992
    THEN (e->>'inputBytes')::numeric::bigint END,
  CASE WHEN jsonb_typeof(e->'httpOutputBytes') = 'number' AND abs((e->>'httpOutputBytes')::numeric) < 9007199254740992
    THEN (e->>'httpOutputBytes')::numeric::bigint END,
  CASE WHEN jsonb_typeof(e->'createdAt') = 'number' AND abs((e->>'createdAt')::numeric) < 253402300799999
    THEN timestamptz 'epoch' + (e->>'createdAt')::numeric::bigint * interval '1 millisecond' END,
  rcv.at, true, coalesce(rcv.at, t.updated_at), coalesce(rcv.at, t.updated_at), coalesce(rcv.at, t.updated_at)
FROM "tasks" t
CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(t.node->'recordings') = 'array' THEN t.node->'recordings' ELSE '[]'::jsonb END) AS e
CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(e->'receivedAt') = 'number' AND abs((e->>'receivedAt')::numeric) < 253402300799999
  THEN timestamptz 'epoch' + (e->>'receivedAt')::numeric::bigint * interval '1 millisecond' END AS at) AS rcv
WHERE jsonb_typeof(e->'fileName') = 'string') AS s(c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16, c17, c18, c19, c20)
ORDER BY s.c1, s.c2, s.c16
ON CONFLICT ("service_code", "file_name") DO UPDATE SET "output_index" = excluded.output_index, "tag" = excluded.tag,
  "path" = excluded.path, "format" = excluded.format, "input_bytes" = excluded.input_bytes,
  "http_output_bytes" = excluded.http_output_bytes, "live_started_at" = excluded.live_started_at,
  "received_at" = excluded.received_at, "from_callback" = true
WHERE r.received_at IS NULL;
