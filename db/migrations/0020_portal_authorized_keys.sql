CREATE TABLE "portal_authorized_keys" (
	"user_id" text NOT NULL,
	"fingerprint" text NOT NULL,
	"algorithm" text NOT NULL,
	"blob" text NOT NULL,
	"comment" text DEFAULT '' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "portal_authorized_keys_user_id_fingerprint_pk" PRIMARY KEY("user_id","fingerprint")
);
--> statement-breakpoint
ALTER TABLE "portal_authorized_keys" ADD CONSTRAINT "portal_authorized_keys_user_id_incoming_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."incoming_users"("id") ON DELETE cascade ON UPDATE no action;