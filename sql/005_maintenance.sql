-- 005: retention. `pushtrack maintain` (and `serve`, periodically) drops the raw-event partitions
-- older than the retention and ages out the per-pair delivery state of old messages. The folded
-- aggregates (message_totals, message_rollups and their sums, message_open_latency,
-- unattributed_reports) are kept, so reports keep their numbers; these tables record what was
-- removed, so that `pushtrack verify` checks only what it can still recompute. See sql/README.md.

-- Messages some of whose raw push reports were dropped with a partition. `pushtrack verify`
-- skips them (their aggregates no longer follow from the raw log that remains).
-- state_aged_out_at: when their rows in `deliveries` were deleted (NULL: not yet, because a pair
-- of the message was still updated within the retention).
CREATE TABLE retired_messages (
    app_id             text COLLATE "C" NOT NULL,
    message_id         text COLLATE "C" NOT NULL,
    raw_dropped_at     timestamptz NOT NULL DEFAULT now(),
    state_aged_out_at  timestamptz,
    PRIMARY KEY (app_id, message_id)
);
CREATE INDEX retired_messages_pending ON retired_messages (app_id, message_id)
    WHERE state_aged_out_at IS NULL;

-- Unattributed legacy reports dropped with a partition, per app, UTC day of event time and
-- category: `verify` adds them to what it counts in the raw log.
CREATE TABLE retired_unattributed (
    app_id    text NOT NULL,
    day       date NOT NULL,
    category  text NOT NULL,
    reports   bigint NOT NULL,
    PRIMARY KEY (app_id, day, category)
);

-- Every raw-event partition maintenance dropped, with its row count: an audit trail.
CREATE TABLE retired_partitions (
    partition_name  text PRIMARY KEY,
    day             date NOT NULL,
    events          bigint NOT NULL,
    dropped_at      timestamptz NOT NULL DEFAULT now()
);

-- Records what a detached daily partition holds (its messages, its unattributed reports, its
-- row count) and deletes its report keys (the idempotency keys of the reports it holds: a retry
-- that old is past the retention). Maintenance calls it in the transaction that drops the
-- table, so the record and the drop happen together or not at all. Returns the row count.
CREATE FUNCTION pushtrack_retire_partition(part text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    day date;
    n bigint;
BEGIN
    IF part !~ '^events_p[0-9]{8}$' THEN
        RAISE EXCEPTION 'not a daily raw-event partition: %', part;
    END IF;
    day := to_date(substr(part, 9), 'YYYYMMDD');
    EXECUTE format(
        'INSERT INTO retired_messages (app_id, message_id)
         SELECT DISTINCT app_id, coalesce(attributed_message_id, message_id) FROM %I
         WHERE outcome NOT IN (''generic'', ''unattributed'')
           AND coalesce(attributed_message_id, message_id) IS NOT NULL
         ORDER BY 1, 2
         ON CONFLICT (app_id, message_id) DO NOTHING', part);
    EXECUTE format(
        'INSERT INTO retired_unattributed AS r (app_id, day, category, reports)
         SELECT app_id, (event_time AT TIME ZONE ''UTC'')::date, category, count(*) FROM %I
         WHERE outcome = ''unattributed''
         GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
         ON CONFLICT (app_id, day, category) DO UPDATE SET reports = r.reports + EXCLUDED.reports',
        part);
    EXECUTE format(
        'DELETE FROM report_keys k USING %I e
         WHERE e.report_key IS NOT NULL AND k.app_id = e.app_id AND k.report_key = e.report_key',
        part);
    EXECUTE format('SELECT count(*) FROM %I', part) INTO n;
    INSERT INTO retired_partitions (partition_name, day, events) VALUES (part, day, n)
    ON CONFLICT (partition_name) DO UPDATE SET events = EXCLUDED.events, dropped_at = now();
    RETURN n;
END;
$$;
