ALTER TABLE "data_transfers" ADD COLUMN "queue_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "data_transfers" ADD COLUMN "attempt" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "data_transfers" ADD COLUMN "mover" text;--> statement-breakpoint
ALTER TABLE "data_transfers" ADD COLUMN "lease_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "data_transfers" ADD COLUMN "host_id" text;--> statement-breakpoint
ALTER TABLE "data_transfers" ADD COLUMN "started_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "data_transfers" ADD COLUMN "finished_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "data_transfers" ADD COLUMN "sent" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE "data_transfers" SET "queue_at" = "scheduled_at";--> statement-breakpoint
CREATE INDEX "data_transfers_due" ON "data_transfers" USING btree ("destination","priority","queue_at","id") WHERE "data_transfers"."status" in ('WAIT', 'RETR', 'INTR');--> statement-breakpoint
CREATE INDEX "data_transfers_running" ON "data_transfers" USING btree ("destination","host_id") WHERE "data_transfers"."status" = 'EXEC';--> statement-breakpoint
CREATE INDEX "data_transfers_lease" ON "data_transfers" USING btree ("lease_until") WHERE "data_transfers"."status" = 'EXEC';