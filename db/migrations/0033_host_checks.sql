CREATE TABLE "host_checks" (
	"hostid" bigint PRIMARY KEY NOT NULL,
	"claim" text,
	"lease_until" timestamp with time zone,
	"started_at" timestamp with time zone,
	"checked_at" timestamp with time zone,
	"ok" boolean,
	"duration_ms" integer,
	"message" text,
	"history" jsonb DEFAULT '[]'::jsonb NOT NULL
);
--> statement-breakpoint
ALTER TABLE "host_checks" ADD CONSTRAINT "host_checks_hostid_hosts_hostid_fk" FOREIGN KEY ("hostid") REFERENCES "public"."hosts"("hostid") ON DELETE cascade ON UPDATE no action;