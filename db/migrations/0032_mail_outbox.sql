CREATE TABLE "host_mail_episodes" (
	"host_id" text PRIMARY KEY NOT NULL,
	"failing_since" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "mail_outbox" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"recipient" text NOT NULL,
	"destination" text NOT NULL,
	"host_id" text,
	"kind" text NOT NULL,
	"transfer_id" bigint,
	"target" text,
	"reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"claim" text,
	"claimed_until" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"done_at" timestamp with time zone,
	"outcome" text
);
--> statement-breakpoint
CREATE INDEX "mail_outbox_pending" ON "mail_outbox" USING btree ("id") WHERE "mail_outbox"."done_at" is null;