ALTER TABLE "push_deliveries" ADD COLUMN "claimed_by" text;--> statement-breakpoint
ALTER TABLE "push_deliveries" ADD COLUMN "claim_expires" bigint;--> statement-breakpoint
CREATE INDEX "push_deliveries_claim" ON "push_deliveries" USING btree ("claimed_by");