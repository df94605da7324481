CREATE TABLE "data_files" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"source" text NOT NULL,
	"size" bigint NOT NULL,
	"checksum" text,
	"registered_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "data_transfers" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"data_file_id" bigint NOT NULL,
	"destination" text NOT NULL,
	"target" text NOT NULL,
	"unique_name" text DEFAULT '' NOT NULL,
	"priority" integer NOT NULL,
	"status" text NOT NULL,
	"standby" boolean DEFAULT false NOT NULL,
	"scheduled_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"metadata" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"message" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "step_notifications" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"product" text NOT NULL,
	"time" text NOT NULL,
	"step" integer NOT NULL,
	"type" text NOT NULL,
	"buffer" bigint DEFAULT 0 NOT NULL,
	"code" text NOT NULL,
	"product_time" timestamp with time zone NOT NULL,
	"scheduled_time" timestamp with time zone,
	"notified_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "step_status" (
	"product" text NOT NULL,
	"time" text NOT NULL,
	"product_time" timestamp with time zone NOT NULL,
	"buffer" bigint NOT NULL,
	"step" integer NOT NULL,
	"type" text NOT NULL,
	"code" text NOT NULL,
	"scheduled_time" timestamp with time zone,
	"last_update" timestamp with time zone NOT NULL,
	CONSTRAINT "step_status_product_time_product_time_buffer_step_type_pk" PRIMARY KEY("product","time","product_time","buffer","step","type")
);
--> statement-breakpoint
ALTER TABLE "data_transfers" ADD CONSTRAINT "data_transfers_data_file_id_data_files_id_fk" FOREIGN KEY ("data_file_id") REFERENCES "public"."data_files"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "data_transfers" ADD CONSTRAINT "data_transfers_destination_destinations_name_fk" FOREIGN KEY ("destination") REFERENCES "public"."destinations"("name") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "data_transfers_live_key" ON "data_transfers" USING btree ("destination","target","unique_name") WHERE "data_transfers"."status" not in ('STOP', 'FAIL');--> statement-breakpoint
CREATE INDEX "data_transfers_expiry" ON "data_transfers" USING btree ("expires_at") WHERE "data_transfers"."status" not in ('DONE', 'FAIL', 'STOP');--> statement-breakpoint
CREATE INDEX "data_transfers_file" ON "data_transfers" USING btree ("data_file_id");--> statement-breakpoint
CREATE INDEX "step_notifications_history" ON "step_notifications" USING btree (lower("product"),lower("time"),"step",lower("type"),"notified_at");--> statement-breakpoint
CREATE INDEX "step_status_cycle" ON "step_status" USING btree (lower("product"),lower("time"),"product_time");