CREATE TABLE "stored_objects" (
	"key" text PRIMARY KEY NOT NULL,
	"data_file_id" bigint NOT NULL,
	"instance" integer NOT NULL,
	"size" bigint NOT NULL,
	"md5" text NOT NULL,
	"sha512" text NOT NULL,
	"stored_at" timestamp with time zone DEFAULT now() NOT NULL,
	"superseded_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "data_files" ADD COLUMN "instance" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "data_files" ADD COLUMN "object_key" text;--> statement-breakpoint
ALTER TABLE "data_files" ADD COLUMN "retrieved_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "data_files" ADD COLUMN "fetch_mover" text;--> statement-breakpoint
ALTER TABLE "data_files" ADD COLUMN "fetch_lease_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "data_files" ADD COLUMN "fetch_tries" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "data_files" ADD COLUMN "fetch_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "data_transfers" ADD COLUMN "ready_status" text;--> statement-breakpoint
CREATE INDEX "stored_objects_file" ON "stored_objects" USING btree ("data_file_id","instance");--> statement-breakpoint
CREATE INDEX "data_transfers_retrieval" ON "data_transfers" USING btree ("priority","queue_at","data_file_id") WHERE "data_transfers"."status" in ('SCHE', 'FETC');