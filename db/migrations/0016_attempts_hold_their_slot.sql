DROP INDEX "data_transfers_due";--> statement-breakpoint
DROP INDEX "data_transfers_running";--> statement-breakpoint
DROP INDEX "data_transfers_lease";--> statement-breakpoint
CREATE INDEX "data_transfers_host_running" ON "data_transfers" USING btree ("host_id") WHERE "data_transfers"."mover" is not null;--> statement-breakpoint
CREATE INDEX "data_transfers_due" ON "data_transfers" USING btree ("destination","priority","queue_at","id") WHERE "data_transfers"."status" in ('WAIT', 'RETR', 'INTR') and "data_transfers"."mover" is null;--> statement-breakpoint
CREATE INDEX "data_transfers_running" ON "data_transfers" USING btree ("destination") WHERE "data_transfers"."mover" is not null;--> statement-breakpoint
CREATE INDEX "data_transfers_lease" ON "data_transfers" USING btree ("lease_until") WHERE "data_transfers"."mover" is not null;