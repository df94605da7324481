CREATE TABLE "destination_queue" (
	"destination" text PRIMARY KEY NOT NULL,
	"next_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "destination_queue" ADD CONSTRAINT "destination_queue_destination_destinations_name_fk" FOREIGN KEY ("destination") REFERENCES "public"."destinations"("name") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "destination_queue_next_at" ON "destination_queue" USING btree ("next_at");--> statement-breakpoint
CREATE INDEX "destinations_time_ranged" ON "destinations" USING btree ("name") WHERE strpos("destinations"."data", 'scheduler.activeTimeRange') > 0;
--> statement-breakpoint
-- A transfer that starts waiting makes its destination due at its queue time, unless the
-- destination already is at or before it. The shared lock, held to the end of the transaction,
-- keeps settleDueQueue from raising the time meanwhile on a snapshot that cannot see this
-- transfer yet; it is taken before the look at the time, which then sees any raise committed.
CREATE FUNCTION "queue_destination"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(7425, hashtext(NEW.destination));
  IF NOT EXISTS (
    SELECT 1 FROM "destination_queue" WHERE "destination" = NEW.destination AND "next_at" <= NEW.queue_at
  ) THEN
    INSERT INTO "destination_queue" ("destination", "next_at") VALUES (NEW.destination, NEW.queue_at)
    ON CONFLICT ("destination") DO UPDATE SET "next_at" = excluded."next_at"
      WHERE "destination_queue"."next_at" > excluded."next_at";
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "data_transfers_queue_destination"
  AFTER INSERT OR UPDATE OF "status", "queue_at", "mover", "expires_at" ON "data_transfers"
  FOR EACH ROW WHEN (NEW.status IN ('WAIT', 'RETR', 'INTR') AND NEW.mover IS NULL)
  EXECUTE FUNCTION "queue_destination"();
--> statement-breakpoint
INSERT INTO "destination_queue" ("destination", "next_at")
SELECT "destination", min("queue_at") FROM "data_transfers"
WHERE "status" IN ('WAIT', 'RETR', 'INTR') AND "mover" IS NULL
GROUP BY "destination";
