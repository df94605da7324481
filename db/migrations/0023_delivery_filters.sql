ALTER TABLE "data_files" ADD COLUMN "filter_name" text;--> statement-breakpoint
ALTER TABLE "data_files" ADD COLUMN "filter_size" bigint;--> statement-breakpoint
ALTER TABLE "data_files" ADD COLUMN "filter_checksum" text;