-- Citus readiness (sql/README.md, "Scaling out: the Citus plan"): every primary and unique key
-- of a table to be distributed by app_id carries app_id, so that Citus can enforce it on each
-- shard. sends was keyed by its identity column alone.
-- send_failures (sql/011) referenced sends by send_id; it follows, keyed by app too.
ALTER TABLE send_failures DROP CONSTRAINT send_failures_send_id_fkey;
ALTER TABLE sends DROP CONSTRAINT sends_pkey;
ALTER TABLE sends ADD PRIMARY KEY (app_id, send_id);
ALTER TABLE send_failures
    DROP CONSTRAINT send_failures_pkey,
    ADD PRIMARY KEY (app_id, send_id, reason),
    ADD FOREIGN KEY (app_id, send_id) REFERENCES sends (app_id, send_id) ON DELETE CASCADE;

-- Streaming replicas (--read-database-url): vacuum truncates the delta tables, which empty every
-- second, under an ACCESS EXCLUSIVE lock; a standby replays that lock and its report queries
-- queue behind it. Without the truncation the few empty pages stay and are reused.
ALTER TABLE report_deltas SET (vacuum_truncate = off);
ALTER TABLE open_latency_deltas SET (vacuum_truncate = off);
