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
CREATE TABLE "destination_aliases" (
	"alias_from" text NOT NULL,
	"alias_to" text NOT NULL,
	CONSTRAINT "destination_aliases_alias_from_alias_to_pk" PRIMARY KEY("alias_from","alias_to")
);
--> statement-breakpoint
CREATE TABLE "destination_hosts" (
	"destination" text NOT NULL,
	"hostid" bigint NOT NULL,
	"priority" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "destination_hosts_destination_hostid_pk" PRIMARY KEY("destination","hostid")
);
--> statement-breakpoint
CREATE TABLE "destination_types" (
	"id" integer PRIMARY KEY NOT NULL,
	"label" text NOT NULL,
	"category" text NOT NULL,
	"position" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "destinations" (
	"name" text PRIMARY KEY NOT NULL,
	"ecuser_name" text,
	"country_iso" text NOT NULL,
	"type" integer NOT NULL,
	"status_code" text DEFAULT 'INIT' NOT NULL,
	"comment" text,
	"active" boolean DEFAULT true NOT NULL,
	"monitor" boolean DEFAULT false NOT NULL,
	"backup" boolean DEFAULT false NOT NULL,
	"acquisition" boolean DEFAULT false NOT NULL,
	"stop_if_dirty" boolean DEFAULT false NOT NULL,
	"force_proxy" boolean DEFAULT false NOT NULL,
	"on_host_failure" integer,
	"if_target_exist" integer,
	"keep_in_spool" integer,
	"max_connections" integer,
	"retry_count" integer,
	"retry_frequency" integer,
	"max_start" integer,
	"start_frequency" integer,
	"max_requeue" integer,
	"max_pending" integer,
	"max_file_size" bigint,
	"reset_frequency" bigint,
	"max_inactivity" bigint,
	"transfer_rate" bigint,
	"user_mail" text,
	"mail_on_update" boolean DEFAULT false NOT NULL,
	"mail_on_start" boolean DEFAULT false NOT NULL,
	"mail_on_end" boolean DEFAULT false NOT NULL,
	"mail_on_error" boolean DEFAULT false NOT NULL,
	"filter_name" text,
	"date_format" text,
	"group_by_date" boolean DEFAULT false NOT NULL,
	"update" bigint,
	"transfer_group_name" text,
	"host_for_source_name" text,
	"data" text DEFAULT '' NOT NULL
);
--> statement-breakpoint
CREATE TABLE "ectrans_modules" (
	"name" text PRIMARY KEY NOT NULL,
	"classe" text,
	"archive" text,
	"active" boolean DEFAULT true NOT NULL
);
--> statement-breakpoint
CREATE TABLE "ecusers" (
	"name" text PRIMARY KEY NOT NULL,
	"uid" integer,
	"gid" integer,
	"dir" text,
	"shell" text,
	"comment" text
);
--> statement-breakpoint
CREATE TABLE "hosts" (
	"hostid" bigserial PRIMARY KEY NOT NULL,
	"ecuser_name" text,
	"transfer_method_name" text,
	"type" text,
	"nickname" text,
	"host" text,
	"login" text,
	"passwd_sealed" text,
	"dir" text,
	"data" text DEFAULT '' NOT NULL,
	"comment" text,
	"active" boolean DEFAULT true NOT NULL,
	"max_connections" integer,
	"retry_count" integer,
	"retry_frequency" integer,
	"check" boolean DEFAULT false NOT NULL,
	"check_frequency" bigint,
	"check_filename" text,
	"mail_on_success" boolean DEFAULT false NOT NULL,
	"mail_on_error" boolean DEFAULT false NOT NULL,
	"notify_once" boolean DEFAULT false NOT NULL,
	"user_mail" text,
	"network_name" text,
	"network_code" text,
	"filter_name" text,
	"transfer_group_name" text,
	"automatic_location" boolean DEFAULT false NOT NULL,
	"acquisition_frequency" bigint
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
CREATE TABLE "metadata_fields" (
	"id" serial PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"label" text NOT NULL,
	"type" text NOT NULL,
	"category" text NOT NULL,
	"tooltip" text,
	"default_value" text,
	"editable" boolean DEFAULT true NOT NULL,
	"max_occurs" integer DEFAULT 1 NOT NULL,
	"position" integer DEFAULT 0 NOT NULL,
	"active" boolean DEFAULT true NOT NULL
);
--> statement-breakpoint
CREATE TABLE "metadata_note_flags" (
	"destination" text NOT NULL,
	"field_id" integer NOT NULL,
	CONSTRAINT "metadata_note_flags_destination_field_id_pk" PRIMARY KEY("destination","field_id")
);
--> statement-breakpoint
CREATE TABLE "metadata_values" (
	"destination" text NOT NULL,
	"field_id" integer NOT NULL,
	"position" integer NOT NULL,
	"value" text NOT NULL,
	CONSTRAINT "metadata_values_destination_field_id_position_pk" PRIMARY KEY("destination","field_id","position")
);
--> statement-breakpoint
CREATE TABLE "transfer_methods" (
	"name" text PRIMARY KEY NOT NULL,
	"ectrans_module_name" text,
	"value" text,
	"restrict" boolean DEFAULT false NOT NULL,
	"resolve" boolean DEFAULT false NOT NULL,
	"comment" text,
	"active" boolean DEFAULT true NOT NULL
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
ALTER TABLE "destination_aliases" ADD CONSTRAINT "destination_aliases_alias_from_destinations_name_fk" FOREIGN KEY ("alias_from") REFERENCES "public"."destinations"("name") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "destination_aliases" ADD CONSTRAINT "destination_aliases_alias_to_destinations_name_fk" FOREIGN KEY ("alias_to") REFERENCES "public"."destinations"("name") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "destination_hosts" ADD CONSTRAINT "destination_hosts_destination_destinations_name_fk" FOREIGN KEY ("destination") REFERENCES "public"."destinations"("name") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "destination_hosts" ADD CONSTRAINT "destination_hosts_hostid_hosts_hostid_fk" FOREIGN KEY ("hostid") REFERENCES "public"."hosts"("hostid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "destinations" ADD CONSTRAINT "destinations_ecuser_name_ecusers_name_fk" FOREIGN KEY ("ecuser_name") REFERENCES "public"."ecusers"("name") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "destinations" ADD CONSTRAINT "destinations_country_iso_countries_iso_fk" FOREIGN KEY ("country_iso") REFERENCES "public"."countries"("iso") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "destinations" ADD CONSTRAINT "destinations_type_destination_types_id_fk" FOREIGN KEY ("type") REFERENCES "public"."destination_types"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "hosts" ADD CONSTRAINT "hosts_ecuser_name_ecusers_name_fk" FOREIGN KEY ("ecuser_name") REFERENCES "public"."ecusers"("name") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "hosts" ADD CONSTRAINT "hosts_transfer_method_name_transfer_methods_name_fk" FOREIGN KEY ("transfer_method_name") REFERENCES "public"."transfer_methods"("name") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "incoming_associations" ADD CONSTRAINT "incoming_associations_user_id_incoming_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."incoming_users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "incoming_associations" ADD CONSTRAINT "incoming_associations_destination_destinations_name_fk" FOREIGN KEY ("destination") REFERENCES "public"."destinations"("name") ON DELETE cascade ON UPDATE cascade;--> statement-breakpoint
ALTER TABLE "incoming_users" ADD CONSTRAINT "incoming_users_iso_countries_iso_fk" FOREIGN KEY ("iso") REFERENCES "public"."countries"("iso") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "metadata_note_flags" ADD CONSTRAINT "metadata_note_flags_destination_destinations_name_fk" FOREIGN KEY ("destination") REFERENCES "public"."destinations"("name") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "metadata_note_flags" ADD CONSTRAINT "metadata_note_flags_field_id_metadata_fields_id_fk" FOREIGN KEY ("field_id") REFERENCES "public"."metadata_fields"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "metadata_values" ADD CONSTRAINT "metadata_values_destination_destinations_name_fk" FOREIGN KEY ("destination") REFERENCES "public"."destinations"("name") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "metadata_values" ADD CONSTRAINT "metadata_values_field_id_metadata_fields_id_fk" FOREIGN KEY ("field_id") REFERENCES "public"."metadata_fields"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "transfer_methods" ADD CONSTRAINT "transfer_methods_ectrans_module_name_ectrans_modules_name_fk" FOREIGN KEY ("ectrans_module_name") REFERENCES "public"."ectrans_modules"("name") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "web_user_categories" ADD CONSTRAINT "web_user_categories_user_id_web_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."web_users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "destination_hosts_host" ON "destination_hosts" USING btree ("hostid");--> statement-breakpoint
CREATE INDEX "destinations_country" ON "destinations" USING btree ("country_iso");--> statement-breakpoint
CREATE INDEX "destinations_type" ON "destinations" USING btree ("type");--> statement-breakpoint
CREATE INDEX "incoming_associations_destination" ON "incoming_associations" USING btree ("destination");--> statement-breakpoint
CREATE UNIQUE INDEX "metadata_fields_name_ci" ON "metadata_fields" USING btree (lower("name"));--> statement-breakpoint
CREATE INDEX "web_user_categories_category" ON "web_user_categories" USING btree ("category");