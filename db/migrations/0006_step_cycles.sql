CREATE TABLE "step_cycles" (
	"product" text NOT NULL,
	"time" text NOT NULL,
	"product_time" timestamp with time zone NOT NULL,
	CONSTRAINT "step_cycles_product_time_pk" PRIMARY KEY("product","time")
);
--> statement-breakpoint
INSERT INTO "step_cycles" ("product", "time", "product_time")
  SELECT "product", "time", max("product_time") FROM "step_status" GROUP BY "product", "time"
ON CONFLICT DO NOTHING;
