CREATE TABLE "destination_state" (
	"destination" text PRIMARY KEY NOT NULL,
	"host_index" integer DEFAULT 0 NOT NULL,
	"host_failures" integer DEFAULT 0 NOT NULL,
	"rounds" integer DEFAULT 0 NOT NULL,
	"left_primary_at" timestamp with time zone,
	"paused_until" timestamp with time zone,
	"pause_reason" text,
	"last_success_at" timestamp with time zone,
	"last_error_at" timestamp with time zone,
	"last_error" text,
	"last_host_id" text
);
--> statement-breakpoint
ALTER TABLE "destinations" ADD COLUMN "scheduler_status" text;--> statement-breakpoint
ALTER TABLE "destination_state" ADD CONSTRAINT "destination_state_destination_destinations_name_fk" FOREIGN KEY ("destination") REFERENCES "public"."destinations"("name") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
-- A started destination shows what the scheduler is doing with it (its scheduler_status).
CREATE OR REPLACE FUNCTION "destination_list_entry"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.list_entry := concat(
    '{"name":', to_json(NEW.name)::text,
    ',"type":', NEW.type::text,
    ',"country":', to_json(NEW.country_iso)::text,
    ',"countryIso":', to_json(NEW.country_iso)::text,
    ',"active":', NEW.active::text,
    ',"statusCode":', to_json(CASE WHEN NEW.status_code IN ('WAIT', 'EXEC') AND NEW.scheduler_status IS NOT NULL
      THEN NEW.scheduler_status ELSE NEW.status_code END)::text,
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
UPDATE "destinations" SET "list_entry" = '';
