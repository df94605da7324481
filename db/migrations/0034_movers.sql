CREATE TABLE "movers" (
	"name" text PRIMARY KEY NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"heartbeat_at" timestamp with time zone NOT NULL,
	"heartbeat_ms" integer NOT NULL,
	"stopped_at" timestamp with time zone
);
