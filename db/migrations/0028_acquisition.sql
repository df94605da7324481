CREATE TABLE "acquisition_runs" (
	"hostid" bigint PRIMARY KEY NOT NULL,
	"mover" text,
	"lease_until" timestamp with time zone,
	"started_at" timestamp with time zone,
	"next_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"outcome" text,
	"output" text,
	"runs" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"entries" jsonb DEFAULT '{}'::jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "wis2_received" (
	"destination" text NOT NULL,
	"message_id" text NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "wis2_received_destination_message_id_pk" PRIMARY KEY("destination","message_id")
);
--> statement-breakpoint
ALTER TABLE "data_files" ADD COLUMN "acquired_from" bigint;--> statement-breakpoint
ALTER TABLE "data_files" ADD COLUMN "source_time" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "acquisition_runs" ADD CONSTRAINT "acquisition_runs_hostid_hosts_hostid_fk" FOREIGN KEY ("hostid") REFERENCES "public"."hosts"("hostid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "wis2_received_at" ON "wis2_received" USING btree ("received_at");