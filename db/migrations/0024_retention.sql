CREATE TABLE "retention_state" (
	"id" integer PRIMARY KEY NOT NULL,
	"identity_checked_id" bigint DEFAULT 0 NOT NULL,
	"purged_transfers" bigint DEFAULT 0 NOT NULL,
	"purged_history" bigint DEFAULT 0 NOT NULL,
	"purged_data_files" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX "data_transfers_retired" ON "data_transfers" USING btree ("updated_at") WHERE "data_transfers"."status" in ('DONE', 'FAIL', 'STOP');