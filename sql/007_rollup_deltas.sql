-- 007: the writers append their rollup changes and never update a shared row.
--
-- Until 006 every batch upserted message_rollups, message_totals and message_open_latency: rows
-- per message, which every batch of a campaign touches. A batch held their row locks until its
-- commit, so the writers of every server queued behind one another on a campaign's rows (one
-- message blasted to a million devices is the common case). Now a batch inserts its changes
-- into report_deltas and open_latency_deltas (insert-only: writers never wait on each other
-- there), and pushtrack_compact_report_deltas(), run every second by `pushtrack serve` (one
-- server at a time), folds them into the five aggregate tables in one transaction. Readers add
-- the deltas not folded yet (the *_counters views), so a report is exact at any moment.
--
-- Stop servers of an earlier version before applying this: they would still upsert
-- message_rollups, which no longer feeds the coarser sums.

-- Serialise with a running compactor, then fold what the 003 triggers left pending: those
-- deltas are already in message_rollups and message_totals, and only the two coarse sums lack
-- them. (The advisory lock is held by this transaction, so the old function's try-lock passes.)
SELECT pg_advisory_xact_lock(hashtext('pushtrack_compact_report_deltas'));
SELECT pushtrack_compact_report_deltas();

DROP TRIGGER message_rollups_deltas_insert ON message_rollups;
DROP TRIGGER message_rollups_deltas_update ON message_rollups;
DROP TRIGGER message_rollups_deltas_delete ON message_rollups;
DROP FUNCTION pushtrack_rollup_deltas();

-- Changes of message_open_latency not folded yet.
CREATE TABLE open_latency_deltas (
    delta_id  bigint GENERATED ALWAYS AS IDENTITY,
    LIKE message_open_latency
);
CREATE INDEX open_latency_deltas_by_message ON open_latency_deltas (app_id, message_id);
ALTER TABLE open_latency_deltas SET (
    autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 1000, autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_analyze_threshold = 1000, autovacuum_analyze_scale_factor = 0);

-- Folds the visible deltas into message_rollups, message_totals, the two coarse sums and
-- message_open_latency in one transaction, and returns how many delta rows it folded; 0 at once
-- when another session is folding. Deltas of transactions still open stay for the next call.
-- Each upsert groups by its key first (a statement may change a row once) and takes rows in key
-- order.
CREATE OR REPLACE FUNCTION pushtrack_compact_report_deltas() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    folded bigint;
    latency bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('pushtrack_compact_report_deltas')) THEN
        RETURN 0;
    END IF;
    WITH gone AS (
        DELETE FROM report_deltas RETURNING *
    ), rollups AS (
        INSERT INTO message_rollups AS t (app_id, message_id, bucket, platform, app_version,
            locale, delivered, confirmed, foreground, background, opened, clicks, dismissed,
            duplicate_reports)
        SELECT app_id, message_id, bucket, platform, app_version, locale, sum(delivered),
               sum(confirmed), sum(foreground), sum(background), sum(opened), sum(clicks),
               sum(dismissed), sum(duplicate_reports)
        FROM gone GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
        ON CONFLICT (app_id, message_id, bucket, platform, app_version, locale) DO UPDATE
        SET delivered = t.delivered + EXCLUDED.delivered, confirmed = t.confirmed + EXCLUDED.confirmed,
            foreground = t.foreground + EXCLUDED.foreground,
            background = t.background + EXCLUDED.background, opened = t.opened + EXCLUDED.opened,
            clicks = t.clicks + EXCLUDED.clicks, dismissed = t.dismissed + EXCLUDED.dismissed,
            duplicate_reports = t.duplicate_reports + EXCLUDED.duplicate_reports
    ), totals AS (
        INSERT INTO message_totals AS t (app_id, message_id, delivered, confirmed, foreground,
            background, opened, clicks, dismissed, duplicate_reports)
        SELECT app_id, message_id, sum(delivered), sum(confirmed), sum(foreground),
               sum(background), sum(opened), sum(clicks), sum(dismissed), sum(duplicate_reports)
        FROM gone GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (app_id, message_id) DO UPDATE
        SET delivered = t.delivered + EXCLUDED.delivered, confirmed = t.confirmed + EXCLUDED.confirmed,
            foreground = t.foreground + EXCLUDED.foreground,
            background = t.background + EXCLUDED.background, opened = t.opened + EXCLUDED.opened,
            clicks = t.clicks + EXCLUDED.clicks, dismissed = t.dismissed + EXCLUDED.dismissed,
            duplicate_reports = t.duplicate_reports + EXCLUDED.duplicate_reports
    ), dimensions AS (
        INSERT INTO message_dimension_totals AS t (app_id, message_id, platform, app_version,
            locale, delivered, confirmed, foreground, background, opened, clicks, dismissed,
            duplicate_reports)
        SELECT app_id, message_id, platform, app_version, locale, sum(delivered), sum(confirmed),
               sum(foreground), sum(background), sum(opened), sum(clicks), sum(dismissed),
               sum(duplicate_reports)
        FROM gone GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT (app_id, message_id, platform, app_version, locale) DO UPDATE
        SET delivered = t.delivered + EXCLUDED.delivered, confirmed = t.confirmed + EXCLUDED.confirmed,
            foreground = t.foreground + EXCLUDED.foreground,
            background = t.background + EXCLUDED.background, opened = t.opened + EXCLUDED.opened,
            clicks = t.clicks + EXCLUDED.clicks, dismissed = t.dismissed + EXCLUDED.dismissed,
            duplicate_reports = t.duplicate_reports + EXCLUDED.duplicate_reports
    ), buckets AS (
        INSERT INTO message_bucket_totals AS t (app_id, message_id, bucket, delivered, confirmed,
            foreground, background, opened, clicks, dismissed, duplicate_reports)
        SELECT app_id, message_id, bucket, sum(delivered), sum(confirmed), sum(foreground),
               sum(background), sum(opened), sum(clicks), sum(dismissed), sum(duplicate_reports)
        FROM gone GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (app_id, message_id, bucket) DO UPDATE
        SET delivered = t.delivered + EXCLUDED.delivered, confirmed = t.confirmed + EXCLUDED.confirmed,
            foreground = t.foreground + EXCLUDED.foreground,
            background = t.background + EXCLUDED.background, opened = t.opened + EXCLUDED.opened,
            clicks = t.clicks + EXCLUDED.clicks, dismissed = t.dismissed + EXCLUDED.dismissed,
            duplicate_reports = t.duplicate_reports + EXCLUDED.duplicate_reports
    )
    -- Data-modifying CTEs run to completion whether or not the final SELECT reads them.
    SELECT count(*) FROM gone INTO folded;
    WITH gone AS (
        DELETE FROM open_latency_deltas RETURNING *
    ), bins AS (
        INSERT INTO message_open_latency AS t (app_id, message_id, bin, pairs)
        SELECT app_id, message_id, bin, sum(pairs) FROM gone GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (app_id, message_id, bin) DO UPDATE SET pairs = t.pairs + EXCLUDED.pairs
    )
    SELECT count(*) FROM gone INTO latency;
    RETURN folded + latency;
END;
$$;

-- What readers use: each aggregate with the deltas not folded yet added (one row per key).
CREATE VIEW message_rollup_counters AS
SELECT app_id, message_id, bucket, platform, app_version, locale,
       sum(delivered)::bigint AS delivered, sum(confirmed)::bigint AS confirmed,
       sum(foreground)::bigint AS foreground, sum(background)::bigint AS background,
       sum(opened)::bigint AS opened, sum(clicks)::bigint AS clicks,
       sum(dismissed)::bigint AS dismissed, sum(duplicate_reports)::bigint AS duplicate_reports
FROM (
    SELECT app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed,
           foreground, background, opened, clicks, dismissed, duplicate_reports
    FROM message_rollups
    UNION ALL
    SELECT app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed,
           foreground, background, opened, clicks, dismissed, duplicate_reports
    FROM report_deltas
) r
GROUP BY 1, 2, 3, 4, 5, 6;

CREATE VIEW message_total_counters AS
SELECT app_id, message_id,
       sum(delivered)::bigint AS delivered, sum(confirmed)::bigint AS confirmed,
       sum(foreground)::bigint AS foreground, sum(background)::bigint AS background,
       sum(opened)::bigint AS opened, sum(clicks)::bigint AS clicks,
       sum(dismissed)::bigint AS dismissed, sum(duplicate_reports)::bigint AS duplicate_reports
FROM (
    SELECT app_id, message_id, delivered, confirmed, foreground, background, opened, clicks,
           dismissed, duplicate_reports
    FROM message_totals
    UNION ALL
    SELECT app_id, message_id, delivered, confirmed, foreground, background, opened, clicks,
           dismissed, duplicate_reports
    FROM report_deltas
) t
GROUP BY 1, 2;

-- Like message_dimension_counters and message_bucket_counters (003), rows to sum: a (message,
-- bin) may have a folded row and unfolded ones. Reports sum them as they group anyway, which
-- spares an aggregation of every bin of every message.
CREATE VIEW message_open_latency_counters AS
SELECT app_id, message_id, bin, pairs FROM message_open_latency
UNION ALL
SELECT app_id, message_id, bin, pairs FROM open_latency_deltas;

-- The same rows with each message's campaign and send time, for the campaign reports. Each table
-- is joined to messages on its own: joined after the UNION ALL, PostgreSQL cannot estimate the
-- join (no statistics cross it), guesses a few rows, and sorts every bin to group them.
CREATE VIEW campaign_open_latency AS
SELECT m.app_id, coalesce(m.campaign_id, m.message_id) AS campaign_id, m.message_id,
       m.first_sent_at, l.bin, l.pairs
FROM message_open_latency l
JOIN messages m ON m.app_id = l.app_id AND m.message_id = l.message_id
UNION ALL
SELECT m.app_id, coalesce(m.campaign_id, m.message_id), m.message_id, m.first_sent_at, l.bin,
       l.pairs
FROM open_latency_deltas l
JOIN messages m ON m.app_id = l.app_id AND m.message_id = l.message_id;

-- message_report as in 004, its totals now message_totals plus the message's unfolded deltas
-- (two index probes per message, summed).
CREATE OR REPLACE VIEW message_report AS
SELECT m.app_id,
       m.message_id,
       coalesce(m.campaign_id, m.message_id) AS campaign_id,
       m.title,
       m.first_sent_at AS sent_at,
       m.registered,
       s.sent,
       s.failed,
       coalesce(t.delivered, 0) AS delivered,
       coalesce(t.confirmed, 0) AS confirmed_arrivals,
       coalesce(t.delivered - t.confirmed, 0) AS inferred_arrivals,
       coalesce(t.foreground, 0) AS foreground_arrivals,
       coalesce(t.background, 0) AS background_arrivals,
       coalesce(t.opened, 0) AS opened,
       coalesce(t.clicks, 0) AS clicks,
       coalesce(t.dismissed, 0) AS dismissed,
       coalesce(t.duplicate_reports, 0) AS duplicate_reports,
       coalesce(t.delivered, 0)::float8 / nullif(s.sent, 0) AS delivery_rate,
       coalesce(t.opened, 0)::float8 / nullif(t.delivered, 0) AS open_rate,
       coalesce(t.opened, 0)::float8 / nullif(s.sent, 0) AS click_through_rate,
       coalesce(i.influenced_opens, 0) AS influenced_opens
FROM messages m
CROSS JOIN LATERAL (
    SELECT sum(u.delivered)::bigint AS delivered, sum(u.confirmed)::bigint AS confirmed,
           sum(u.foreground)::bigint AS foreground, sum(u.background)::bigint AS background,
           sum(u.opened)::bigint AS opened, sum(u.clicks)::bigint AS clicks,
           sum(u.dismissed)::bigint AS dismissed,
           sum(u.duplicate_reports)::bigint AS duplicate_reports
    FROM (
        SELECT x.delivered, x.confirmed, x.foreground, x.background, x.opened, x.clicks,
               x.dismissed, x.duplicate_reports
        FROM message_totals x
        WHERE x.app_id = m.app_id AND x.message_id = m.message_id
        UNION ALL
        SELECT d.delivered, d.confirmed, d.foreground, d.background, d.opened, d.clicks,
               d.dismissed, d.duplicate_reports
        FROM report_deltas d
        WHERE d.app_id = m.app_id AND d.message_id = m.message_id
    ) u
) t
LEFT JOIN message_influence i ON i.app_id = m.app_id AND i.message_id = m.message_id
CROSS JOIN LATERAL (
    SELECT coalesce(sum(x.sent), 0)::bigint AS sent, coalesce(sum(x.failed), 0)::bigint AS failed
    FROM sends x
    WHERE x.app_id = m.app_id AND x.message_id = m.message_id
) s;
