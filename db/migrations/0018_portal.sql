CREATE TABLE "portal_connections" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"server" text NOT NULL,
	"protocol" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"lease_until" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "portal_options" (
	"user_id" text NOT NULL,
	"name" text NOT NULL,
	"value" text NOT NULL,
	CONSTRAINT "portal_options_user_id_name_pk" PRIMARY KEY("user_id","name")
);
--> statement-breakpoint
CREATE TABLE "portal_permissions" (
	"user_id" text NOT NULL,
	"operation" text NOT NULL,
	CONSTRAINT "portal_permissions_user_id_operation_pk" PRIMARY KEY("user_id","operation")
);
--> statement-breakpoint
CREATE TABLE "portal_sessions" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"subscriber_id" bigint,
	"csrf" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "portal_subscribers" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"name" text NOT NULL,
	"email" text NOT NULL,
	"iso" text NOT NULL,
	"status" text NOT NULL,
	"password_hash" text,
	"token_hash" text,
	"token_expires_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"verified_at" timestamp with time zone,
	"activated_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "portal_traffic" (
	"user_id" text NOT NULL,
	"minute" timestamp with time zone NOT NULL,
	"protocol" text NOT NULL,
	"download_bytes" bigint DEFAULT 0 NOT NULL,
	"upload_bytes" bigint DEFAULT 0 NOT NULL,
	"downloads" integer DEFAULT 0 NOT NULL,
	"uploads" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "portal_traffic_user_id_minute_protocol_pk" PRIMARY KEY("user_id","minute","protocol")
);
--> statement-breakpoint
ALTER TABLE "incoming_users" ADD COLUMN "last_login_address" text;--> statement-breakpoint
ALTER TABLE "portal_options" ADD CONSTRAINT "portal_options_user_id_incoming_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."incoming_users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "portal_permissions" ADD CONSTRAINT "portal_permissions_user_id_incoming_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."incoming_users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "portal_sessions" ADD CONSTRAINT "portal_sessions_user_id_incoming_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."incoming_users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "portal_sessions" ADD CONSTRAINT "portal_sessions_subscriber_id_portal_subscribers_id_fk" FOREIGN KEY ("subscriber_id") REFERENCES "public"."portal_subscribers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "portal_subscribers" ADD CONSTRAINT "portal_subscribers_user_id_incoming_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."incoming_users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "portal_subscribers" ADD CONSTRAINT "portal_subscribers_iso_countries_iso_fk" FOREIGN KEY ("iso") REFERENCES "public"."countries"("iso") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "portal_connections_user" ON "portal_connections" USING btree ("user_id","lease_until");--> statement-breakpoint
CREATE INDEX "portal_sessions_user" ON "portal_sessions" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "portal_subscribers_email" ON "portal_subscribers" USING btree ("user_id",lower("email"));--> statement-breakpoint
CREATE UNIQUE INDEX "portal_subscribers_token" ON "portal_subscribers" USING btree ("token_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "portal_subscribers_password" ON "portal_subscribers" USING btree ("password_hash");--> statement-breakpoint
CREATE INDEX "data_transfers_portal" ON "data_transfers" USING btree ("destination","target" collate "C","id" DESC NULLS LAST);--> statement-breakpoint
INSERT INTO "portal_permissions" ("user_id", "operation")
  SELECT "id", "operation" FROM "incoming_users", unnest(ARRAY['dir', 'get', 'mtime', 'size']) AS "operation";
