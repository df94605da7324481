CREATE TABLE "host_sessions" (
	"host_id" text NOT NULL,
	"mover" text NOT NULL,
	"sessions" integer NOT NULL,
	"lease_until" timestamp with time zone NOT NULL,
	CONSTRAINT "host_sessions_host_id_mover_pk" PRIMARY KEY("host_id","mover")
);
