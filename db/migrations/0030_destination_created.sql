ALTER TABLE "destinations" ADD COLUMN "created_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
-- Destinations made before this migration have no date of their own: they take the upgrade's.
COMMENT ON COLUMN "destinations"."created_at" IS 'When the destination was created (an S3 bucket''s CreationDate in the portal)';
