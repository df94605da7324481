CREATE TABLE "api_clients" (
	"username" text PRIMARY KEY NOT NULL,
	"secret_hash" text NOT NULL,
	"permissions" text[] DEFAULT '{}'::text[] NOT NULL,
	"origin" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "countries" (
	"iso" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "destinations" (
	"name" text PRIMARY KEY NOT NULL
);
--> statement-breakpoint
CREATE TABLE "incoming_associations" (
	"user_id" text NOT NULL,
	"destination" text NOT NULL,
	CONSTRAINT "incoming_associations_user_id_destination_pk" PRIMARY KEY("user_id","destination")
);
--> statement-breakpoint
CREATE TABLE "incoming_users" (
	"id" text PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"iso" text NOT NULL,
	"portal_service" text NOT NULL,
	"active" boolean NOT NULL,
	"password_sealed" text,
	"last_login_date" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "web_user_categories" (
	"user_id" text NOT NULL,
	"category" text NOT NULL,
	CONSTRAINT "web_user_categories_user_id_category_pk" PRIMARY KEY("user_id","category")
);
--> statement-breakpoint
CREATE TABLE "web_users" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text,
	"active" boolean NOT NULL,
	"password_sealed" text NOT NULL,
	"password_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "incoming_associations" ADD CONSTRAINT "incoming_associations_user_id_incoming_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."incoming_users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "incoming_associations" ADD CONSTRAINT "incoming_associations_destination_destinations_name_fk" FOREIGN KEY ("destination") REFERENCES "public"."destinations"("name") ON DELETE cascade ON UPDATE cascade;--> statement-breakpoint
ALTER TABLE "incoming_users" ADD CONSTRAINT "incoming_users_iso_countries_iso_fk" FOREIGN KEY ("iso") REFERENCES "public"."countries"("iso") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "web_user_categories" ADD CONSTRAINT "web_user_categories_user_id_web_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."web_users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "incoming_associations_destination" ON "incoming_associations" USING btree ("destination");--> statement-breakpoint
CREATE INDEX "web_user_categories_category" ON "web_user_categories" USING btree ("category");