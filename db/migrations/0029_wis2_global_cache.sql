CREATE TABLE "wis2_cache_metrics" (
	"report_by" text NOT NULL,
	"centre_id" text NOT NULL,
	"downloaded" bigint DEFAULT 0 NOT NULL,
	"downloaded_bytes" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"integrity_failed" bigint DEFAULT 0 NOT NULL,
	"no_cache" bigint DEFAULT 0 NOT NULL,
	"last_download_at" timestamp with time zone,
	"server_up" boolean,
	CONSTRAINT "wis2_cache_metrics_report_by_centre_id_pk" PRIMARY KEY("report_by","centre_id")
);
--> statement-breakpoint
ALTER TABLE "wis2_outbox" ALTER COLUMN "data_file_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "wis2_outbox" ALTER COLUMN "transfer_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "wis2_outbox" ADD COLUMN "origin_topic" text;--> statement-breakpoint
ALTER TABLE "wis2_outbox" ADD COLUMN "origin_message" jsonb;--> statement-breakpoint
ALTER TABLE "wis2_received" ADD COLUMN "taken_at" timestamp with time zone;--> statement-breakpoint
UPDATE "wis2_received" SET "taken_at" = "received_at";