CREATE TABLE "transfer_history" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"transfer_id" bigint NOT NULL,
	"destination" text NOT NULL,
	"host_id" text,
	"status" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"sent" bigint DEFAULT 0 NOT NULL,
	"comment" text,
	"error" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
ALTER TABLE "transfer_history" ADD CONSTRAINT "transfer_history_transfer_id_data_transfers_id_fk" FOREIGN KEY ("transfer_id") REFERENCES "public"."data_transfers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "transfer_history_transfer" ON "transfer_history" USING btree ("transfer_id","at");--> statement-breakpoint
CREATE INDEX "transfer_history_destination" ON "transfer_history" USING btree ("destination","at");--> statement-breakpoint
INSERT INTO "transfer_history" ("transfer_id", "destination", "status", "at", "comment")
SELECT "id", "destination", "status", "updated_at", 'Status when the history began' FROM "data_transfers";
