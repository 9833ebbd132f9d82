-- 023: the writers append a pair's time-to-open bin in a report_deltas row of its message
-- (issue 17).
--
-- Until now every group commit's deltas statement inserted into two tables: the counters (with
-- the arrival seconds, 022) into report_deltas, the time-to-open bins into open_latency_deltas.
-- A bin has no bucket or dimensions, only its message, and it changes only with the pair's
-- counters (the open and the click that set it, an earlier arrival reported late), so a
-- report_deltas row of its message can carry it: report_deltas gains open_bin and open_pairs
-- (0: none). The writer puts each bin in a row of its message's counters, else in a row of its
-- own with zero counters at the key of another of the message's rows of the same statement (no
-- reader sees a new group: that row's counters are folded with it). A first click then appends
-- one row where it appended two, and every commit and every part's fold touch one table fewer.
--
-- Stop servers of an earlier version before applying this: they append to open_latency_deltas,
-- which is gone.

-- Fold what earlier servers left in open_latency_deltas (this transaction holds the fold's
-- lock until it commits, so no compactor runs meanwhile).
SELECT pg_advisory_xact_lock(hashtext('pushtrack_compact_report_deltas'));
SELECT pg_advisory_xact_lock(hashtext('pushtrack_compact_delivery_deltas'));
WITH gone AS (
    DELETE FROM open_latency_deltas RETURNING app_id, message_id, bin, pairs
)
INSERT INTO message_open_latency AS t (app_id, message_id, bin, pairs)
SELECT app_id, message_id, bin, sum(pairs) FROM gone GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
ON CONFLICT (app_id, message_id, bin) DO UPDATE SET pairs = t.pairs + EXCLUDED.pairs;

-- Constant defaults: no rewrite of the table.
ALTER TABLE report_deltas
    ADD COLUMN open_bin integer NOT NULL DEFAULT 0,
    ADD COLUMN open_pairs bigint NOT NULL DEFAULT 0;

-- The readers of 007 and 022, with the unfolded bins read from report_deltas.
CREATE OR REPLACE VIEW message_open_latency_counters AS
SELECT app_id, message_id, bin, pairs FROM message_open_latency
UNION ALL
SELECT app_id, message_id, open_bin, open_pairs FROM report_deltas WHERE open_pairs <> 0;

CREATE OR REPLACE VIEW campaign_open_latency AS
SELECT m.app_id, coalesce(m.campaign_id, m.message_id) AS campaign_id, m.message_id,
       m.first_sent_at, l.bin, l.pairs
FROM message_open_latency l
JOIN messages m ON m.app_id = l.app_id AND m.message_id = l.message_id
UNION ALL
SELECT m.app_id, coalesce(m.campaign_id, m.message_id), m.message_id, m.first_sent_at,
       d.open_bin, d.open_pairs
FROM report_deltas d
JOIN messages m ON m.app_id = d.app_id AND m.message_id = d.message_id
WHERE d.open_pairs <> 0;

CREATE OR REPLACE VIEW message_histogram_parts AS
SELECT m.app_id, m.message_id, m.campaign_id, m.first_sent_at, h.histogram, h.platform, h.bins
  FROM messages m
  JOIN (SELECT app_id, message_id, histogram, platform, bins FROM message_histograms
        UNION ALL
        SELECT app_id, message_id, histogram, platform, bin || ':' || count
          FROM message_histogram_changes) h
    ON h.app_id = m.app_id AND h.message_id = m.message_id
 WHERE h.histogram <> 'deliver'
    OR NOT EXISTS (SELECT 1 FROM deliver_rebuilds r
                    WHERE r.app_id = m.app_id AND r.message_id = m.message_id)
UNION ALL
SELECT m.app_id, m.message_id, m.campaign_id, m.first_sent_at, 'open', '',
       d.open_bin || ':' || d.open_pairs
  FROM messages m
  JOIN report_deltas d ON d.app_id = m.app_id AND d.message_id = m.message_id
 WHERE d.open_pairs <> 0
UNION ALL
SELECT m.app_id, m.message_id, m.campaign_id, m.first_sent_at, 'opens', '',
       (extract(epoch FROM r.bucket)::bigint / 300) || ':' || r.opened
  FROM messages m
  JOIN report_deltas r ON r.app_id = m.app_id AND r.message_id = m.message_id
 WHERE r.opened <> 0
UNION ALL
SELECT m.app_id, m.message_id, m.campaign_id, m.first_sent_at, 'deliver', x.platform,
       x.bin || ':' || x.pairs
  FROM messages m
 CROSS JOIN LATERAL (SELECT pushtrack_delivery_waves(m.app_id, m.message_id) AS waves) w
 CROSS JOIN LATERAL (
       SELECT s.platform, pushtrack_deliver_bin(s.second, w.waves) AS bin, s.pairs
         FROM message_arrival_seconds s
        WHERE s.app_id = m.app_id AND s.message_id = m.message_id
          AND EXISTS (SELECT 1 FROM deliver_rebuilds r
                       WHERE r.app_id = m.app_id AND r.message_id = m.message_id)
       UNION ALL
       SELECT d.platform, pushtrack_deliver_bin(d.arrival_second, w.waves), d.arrival_pairs
         FROM report_deltas d
        WHERE d.app_id = m.app_id AND d.message_id = m.message_id AND d.arrival_pairs <> 0) x
 WHERE cardinality(w.waves) > 0
   AND (EXISTS (SELECT 1 FROM report_deltas d
                 WHERE d.app_id = m.app_id AND d.message_id = m.message_id
                   AND d.arrival_pairs <> 0)
        OR EXISTS (SELECT 1 FROM deliver_rebuilds r
                    WHERE r.app_id = m.app_id AND r.message_id = m.message_id));

DROP TABLE open_latency_deltas;

-- The fold of 022, with the time-to-open bins (the `opens` CTE, where 022 folded
-- open_latency_deltas in a statement of its own). Returns the delta rows folded.
CREATE OR REPLACE FUNCTION pushtrack_compact_report_deltas(p_part integer, p_parts integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    folded bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('pushtrack_compact_report_deltas'))
       OR NOT pg_try_advisory_xact_lock(hashtext('pushtrack_compact_delivery_deltas')) THEN
        RETURN 0;
    END IF;
    WITH gone AS (
        DELETE FROM report_deltas
         WHERE pushtrack_compaction_part(message_id, p_parts) = p_part
        RETURNING app_id, message_id, bucket, platform, app_version, locale, delivered,
                  confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports,
                  extension_confirmed, arrival_second, arrival_pairs, open_bin, open_pairs
    ), fine AS (
        -- The finest grouping, once; the coarser aggregates sum these sums.
        SELECT app_id, message_id, bucket, platform, app_version, locale,
               sum(delivered)::bigint AS delivered, sum(confirmed)::bigint AS confirmed,
               sum(foreground)::bigint AS foreground, sum(background)::bigint AS background,
               sum(opened)::bigint AS opened, sum(clicks)::bigint AS clicks,
               sum(dismissed)::bigint AS dismissed,
               sum(duplicate_reports)::bigint AS duplicate_reports,
               sum(extension_confirmed)::bigint AS extension_confirmed
        FROM gone GROUP BY 1, 2, 3, 4, 5, 6
    ), rollups AS (
        INSERT INTO message_rollups AS t (app_id, message_id, bucket, platform, app_version,
            locale, delivered, confirmed, foreground, background, opened, clicks, dismissed,
            duplicate_reports, extension_confirmed)
        SELECT * FROM fine ORDER BY 1, 2, 3, 4, 5, 6
        ON CONFLICT (app_id, message_id, bucket, platform, app_version, locale) DO UPDATE
        SET delivered = t.delivered + EXCLUDED.delivered, confirmed = t.confirmed + EXCLUDED.confirmed,
            foreground = t.foreground + EXCLUDED.foreground,
            background = t.background + EXCLUDED.background, opened = t.opened + EXCLUDED.opened,
            clicks = t.clicks + EXCLUDED.clicks, dismissed = t.dismissed + EXCLUDED.dismissed,
            duplicate_reports = t.duplicate_reports + EXCLUDED.duplicate_reports,
            extension_confirmed = t.extension_confirmed + EXCLUDED.extension_confirmed
    ), totals AS (
        INSERT INTO message_totals AS t (app_id, message_id, delivered, confirmed, foreground,
            background, opened, clicks, dismissed, duplicate_reports, extension_confirmed)
        SELECT app_id, message_id, sum(delivered), sum(confirmed), sum(foreground),
               sum(background), sum(opened), sum(clicks), sum(dismissed), sum(duplicate_reports),
               sum(extension_confirmed)
        FROM fine GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (app_id, message_id) DO UPDATE
        SET delivered = t.delivered + EXCLUDED.delivered, confirmed = t.confirmed + EXCLUDED.confirmed,
            foreground = t.foreground + EXCLUDED.foreground,
            background = t.background + EXCLUDED.background, opened = t.opened + EXCLUDED.opened,
            clicks = t.clicks + EXCLUDED.clicks, dismissed = t.dismissed + EXCLUDED.dismissed,
            duplicate_reports = t.duplicate_reports + EXCLUDED.duplicate_reports,
            extension_confirmed = t.extension_confirmed + EXCLUDED.extension_confirmed
    ), dimensions AS (
        INSERT INTO message_dimension_totals AS t (app_id, message_id, platform, app_version,
            locale, delivered, confirmed, foreground, background, opened, clicks, dismissed,
            duplicate_reports, extension_confirmed)
        SELECT app_id, message_id, platform, app_version, locale, sum(delivered), sum(confirmed),
               sum(foreground), sum(background), sum(opened), sum(clicks), sum(dismissed),
               sum(duplicate_reports), sum(extension_confirmed)
        FROM fine GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT (app_id, message_id, platform, app_version, locale) DO UPDATE
        SET delivered = t.delivered + EXCLUDED.delivered, confirmed = t.confirmed + EXCLUDED.confirmed,
            foreground = t.foreground + EXCLUDED.foreground,
            background = t.background + EXCLUDED.background, opened = t.opened + EXCLUDED.opened,
            clicks = t.clicks + EXCLUDED.clicks, dismissed = t.dismissed + EXCLUDED.dismissed,
            duplicate_reports = t.duplicate_reports + EXCLUDED.duplicate_reports,
            extension_confirmed = t.extension_confirmed + EXCLUDED.extension_confirmed
    ), buckets AS (
        INSERT INTO message_bucket_totals AS t (app_id, message_id, bucket, delivered, confirmed,
            foreground, background, opened, clicks, dismissed, duplicate_reports,
            extension_confirmed)
        SELECT app_id, message_id, bucket, sum(delivered), sum(confirmed), sum(foreground),
               sum(background), sum(opened), sum(clicks), sum(dismissed), sum(duplicate_reports),
               sum(extension_confirmed)
        FROM fine GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (app_id, message_id, bucket) DO UPDATE
        SET delivered = t.delivered + EXCLUDED.delivered, confirmed = t.confirmed + EXCLUDED.confirmed,
            foreground = t.foreground + EXCLUDED.foreground,
            background = t.background + EXCLUDED.background, opened = t.opened + EXCLUDED.opened,
            clicks = t.clicks + EXCLUDED.clicks, dismissed = t.dismissed + EXCLUDED.dismissed,
            duplicate_reports = t.duplicate_reports + EXCLUDED.duplicate_reports,
            extension_confirmed = t.extension_confirmed + EXCLUDED.extension_confirmed
    ), health AS (
        INSERT INTO app_health_days AS t (app_id, day, platform, app_version, delivered,
            confirmed, extension_confirmed)
        SELECT app_id, (bucket AT TIME ZONE 'UTC')::date, platform, app_version, sum(delivered),
               sum(confirmed), sum(extension_confirmed)
        FROM fine GROUP BY 1, 2, 3, 4
        HAVING sum(delivered) <> 0 OR sum(confirmed) <> 0 OR sum(extension_confirmed) <> 0
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (app_id, day, platform, app_version) DO UPDATE
        SET delivered = t.delivered + EXCLUDED.delivered, confirmed = t.confirmed + EXCLUDED.confirmed,
            extension_confirmed = t.extension_confirmed + EXCLUDED.extension_confirmed
    ), opens AS (
        INSERT INTO message_open_latency AS t (app_id, message_id, bin, pairs)
        SELECT app_id, message_id, open_bin, sum(open_pairs)
          FROM gone WHERE open_pairs <> 0 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (app_id, message_id, bin) DO UPDATE SET pairs = t.pairs + EXCLUDED.pairs
    ), arrivals AS (
        SELECT app_id, message_id, platform, arrival_second AS second,
               sum(arrival_pairs)::bigint AS pairs
          FROM gone WHERE arrival_pairs <> 0 GROUP BY 1, 2, 3, 4
    ), seconds AS (
        INSERT INTO message_arrival_seconds AS t (app_id, message_id, platform, second, pairs)
        SELECT * FROM arrivals ORDER BY 1, 2, 3, 4
        ON CONFLICT (app_id, message_id, platform, second) DO UPDATE
        SET pairs = t.pairs + EXCLUDED.pairs
    ), waves AS (
        SELECT m.app_id, m.message_id, pushtrack_delivery_waves(m.app_id, m.message_id) AS waves
          FROM (SELECT DISTINCT app_id, message_id FROM arrivals) m
    ), arrival_bins AS (
        INSERT INTO message_deliver_latency AS t (app_id, message_id, platform, bin, pairs)
        SELECT a.app_id, a.message_id, a.platform, pushtrack_deliver_bin(a.second, w.waves),
               sum(a.pairs)
          FROM arrivals a JOIN waves w USING (app_id, message_id)
         WHERE cardinality(w.waves) > 0
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (app_id, message_id, platform, bin) DO UPDATE
        SET pairs = t.pairs + EXCLUDED.pairs
    )
    -- Data-modifying CTEs run to completion whether or not the final SELECT reads them.
    SELECT count(*) FROM gone INTO folded;
    RETURN folded;
END;
$$;
