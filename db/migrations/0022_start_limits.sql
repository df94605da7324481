CREATE TABLE "destination_requeues" (
	"destination" text PRIMARY KEY NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "data_transfers" ADD COLUMN "start_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "data_transfers" ADD COLUMN "requeue_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "data_transfers" ADD COLUMN "requeue_history" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "destination_requeues" ADD CONSTRAINT "destination_requeues_destination_destinations_name_fk" FOREIGN KEY ("destination") REFERENCES "public"."destinations"("name") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "data_transfers_restarted" ON "data_transfers" USING btree ("destination","priority","queue_at","id") WHERE "data_transfers"."status" in ('WAIT', 'RETR', 'INTR') and "data_transfers"."mover" is null and "data_transfers"."start_count" > 0;