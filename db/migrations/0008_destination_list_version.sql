CREATE TABLE "list_versions" (
	"name" text PRIMARY KEY NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
INSERT INTO "list_versions" ("name", "version") VALUES ('destinations', 0);
--> statement-breakpoint
-- Raised at commit (a deferred constraint trigger), after every row lock the transaction takes,
-- so two writers never wait on each other through this row; readers see the new version in
-- the same snapshot as the change.
CREATE FUNCTION "raise_destination_list_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Once per transaction, however many rows it changed.
  IF current_setting('ecpds.destination_list_raised', true) IS DISTINCT FROM txid_current()::text THEN
    UPDATE "list_versions" SET "version" = "version" + 1 WHERE "name" = 'destinations';
    PERFORM set_config('ecpds.destination_list_raised', txid_current()::text, true);
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "destinations_list_version" AFTER INSERT OR UPDATE OR DELETE ON "destinations"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "raise_destination_list_version"();
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "incoming_associations_list_version" AFTER INSERT OR UPDATE OR DELETE ON "incoming_associations"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "raise_destination_list_version"();
--> statement-breakpoint
CREATE TRIGGER "destinations_list_version_truncate" AFTER TRUNCATE ON "destinations"
  FOR EACH STATEMENT EXECUTE FUNCTION "raise_destination_list_version"();
--> statement-breakpoint
CREATE TRIGGER "incoming_associations_list_version_truncate" AFTER TRUNCATE ON "incoming_associations"
  FOR EACH STATEMENT EXECUTE FUNCTION "raise_destination_list_version"();
