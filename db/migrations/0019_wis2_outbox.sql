CREATE TABLE "wis2_outbox" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"data_file_id" bigint NOT NULL,
	"transfer_id" bigint NOT NULL,
	"destination" text NOT NULL,
	"target" text NOT NULL,
	"kind" text NOT NULL,
	"not_before" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"message_id" text,
	"claimed_until" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"done_at" timestamp with time zone,
	"outcome" text
);
--> statement-breakpoint
ALTER TABLE "data_files" ADD COLUMN "sha512" text;--> statement-breakpoint
CREATE INDEX "wis2_outbox_due" ON "wis2_outbox" USING btree ("not_before","id") WHERE "wis2_outbox"."done_at" is null;