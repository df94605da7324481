ALTER TABLE "destinations" ADD COLUMN "list_entry" text DEFAULT '' NOT NULL;
--> statement-breakpoint
-- The destination/list record of wire-decisions §4, serialized as JSON.stringify would (to_json
-- escapes strings the same way; booleans cast to text are true/false).
CREATE FUNCTION "destination_list_entry"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.list_entry := concat(
    '{"name":', to_json(NEW.name)::text,
    ',"type":', NEW.type::text,
    ',"country":', to_json(NEW.country_iso)::text,
    ',"countryIso":', to_json(NEW.country_iso)::text,
    ',"active":', NEW.active::text,
    ',"statusCode":', to_json(NEW.status_code)::text,
    ',"backup":', NEW.backup::text,
    ',"comment":', coalesce(to_json(NEW.comment)::text, 'null'),
    ',"monitor":', NEW.monitor::text,
    ',"acquisition":', NEW.acquisition::text,
    ',"userMail":', coalesce(to_json(NEW.user_mail)::text, 'null'),
    ',"filterName":', coalesce(to_json(NEW.filter_name)::text, 'null'),
    '}');
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "destinations_list_entry" BEFORE INSERT OR UPDATE ON "destinations"
  FOR EACH ROW EXECUTE FUNCTION "destination_list_entry"();
--> statement-breakpoint
-- Fills the entry of every existing destination.
UPDATE "destinations" SET "list_entry" = '';
