-- 022: the writers append a pair's arrival second in the report_deltas row of its delivery
-- (issue 17).
--
-- Until now a confirmed arrival appended two delta rows: its counters to report_deltas (per
-- bucket and dimensions) and its arrival second to deliver_deltas (per platform and second).
-- They come from one time: a pair's delivery is counted in the bucket of its first arrival, the
-- arrival second is that arrival's, and an earlier arrival reported late moves both. So one row
-- now carries both: report_deltas gains arrival_second and arrival_pairs (0: no arrival), and the
-- writer puts each arrival in the row of the counters with its bucket and dimensions, else in a
-- row of its own with zero counters at that key (a key where the pair's delivery is or was
-- counted, so no reader sees a new group). Measured with a build that appended no arrival
-- deltas at all: the second row cost about 6 µs of PostgreSQL CPU per single-event request, a
-- tenth (loadtest/README.md, "What the arrival deltas cost").
--
-- The report fold now also folds the arrival seconds, and so takes the delivery fold's lock as
-- well (the rebuild of a histogram, and the packing of 014, must not see half a fold); the
-- delivery fold keeps the rebuilds. Stop servers of an earlier version before applying this:
-- they append to deliver_deltas, which is gone.

-- Fold what earlier servers left in deliver_deltas, with the fold of 021 (this transaction holds
-- the lock until it commits, so that fold's try-lock passes and no compactor runs meanwhile).
SELECT pg_advisory_xact_lock(hashtext('pushtrack_compact_report_deltas'));
SELECT pg_advisory_xact_lock(hashtext('pushtrack_compact_delivery_deltas'));
SELECT pushtrack_compact_delivery_deltas(0, 1);

-- Constant defaults: no rewrite of the table.
ALTER TABLE report_deltas
    ADD COLUMN arrival_second bigint NOT NULL DEFAULT 0,
    ADD COLUMN arrival_pairs bigint NOT NULL DEFAULT 0;

-- The readers of 010 and 014, with the unfolded arrivals read from report_deltas.
CREATE OR REPLACE VIEW message_deliver_latency_counters AS
SELECT m.app_id, m.message_id, m.campaign_id, m.first_sent_at, x.platform, x.bin, x.pairs
  FROM messages m
 CROSS JOIN LATERAL (
       SELECT pushtrack_delivery_waves(m.app_id, m.message_id) AS waves,
              EXISTS (SELECT 1 FROM deliver_rebuilds r
                       WHERE r.app_id = m.app_id AND r.message_id = m.message_id) AS stale) w
 CROSS JOIN LATERAL (
       SELECT l.platform, l.bin, l.pairs FROM message_deliver_latency l
        WHERE NOT w.stale AND l.app_id = m.app_id AND l.message_id = m.message_id
       UNION ALL
       SELECT s.platform, pushtrack_deliver_bin(s.second, w.waves), s.pairs
         FROM message_arrival_seconds s
        WHERE w.stale AND s.app_id = m.app_id AND s.message_id = m.message_id
       UNION ALL
       SELECT d.platform, pushtrack_deliver_bin(d.arrival_second, w.waves), d.arrival_pairs
         FROM report_deltas d
        WHERE d.app_id = m.app_id AND d.message_id = m.message_id AND d.arrival_pairs <> 0) x
 WHERE cardinality(w.waves) > 0;

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
SELECT m.app_id, m.message_id, m.campaign_id, m.first_sent_at, 'open', '', l.bin || ':' || l.pairs
  FROM messages m
  JOIN open_latency_deltas l ON l.app_id = m.app_id AND l.message_id = m.message_id
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

DROP TABLE deliver_deltas;

-- The fold of 021, with the arrival seconds (the `arrivals` CTEs, as the delivery fold of 021
-- had them). Returns the delta rows folded, as before: a row with an arrival counts once.
CREATE OR REPLACE FUNCTION pushtrack_compact_report_deltas(p_part integer, p_parts integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    folded bigint;
    latency bigint;
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
                  extension_confirmed, arrival_second, arrival_pairs
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
    WITH gone AS (
        DELETE FROM open_latency_deltas
         WHERE pushtrack_compaction_part(message_id, p_parts) = p_part
        RETURNING *
    ), bins AS (
        INSERT INTO message_open_latency AS t (app_id, message_id, bin, pairs)
        SELECT app_id, message_id, bin, sum(pairs) FROM gone GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (app_id, message_id, bin) DO UPDATE SET pairs = t.pairs + EXCLUDED.pairs
    )
    SELECT count(*) FROM gone INTO latency;
    RETURN folded + latency;
END;
$$;

-- The delivery fold keeps the rebuilds of 010: the histograms of the messages with a new send,
-- made again from their arrival seconds. The part arguments stay for the compactor's call; the
-- queue is small, and emptied whole.
CREATE OR REPLACE FUNCTION pushtrack_compact_delivery_deltas(p_part integer, p_parts integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    apps text[];
    messages text[];
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('pushtrack_compact_delivery_deltas')) THEN
        RETURN 0;
    END IF;
    WITH queued AS (
        DELETE FROM deliver_rebuilds RETURNING app_id, message_id
    )
    SELECT array_agg(app_id ORDER BY app_id, message_id),
           array_agg(message_id ORDER BY app_id, message_id)
      FROM (SELECT DISTINCT app_id, message_id FROM queued) q
      INTO apps, messages;
    IF apps IS NULL THEN
        RETURN 0;
    END IF;
    DELETE FROM message_deliver_latency l
     USING unnest(apps, messages) AS u(a, m)
     WHERE l.app_id = u.a AND l.message_id = u.m;
    INSERT INTO message_deliver_latency (app_id, message_id, platform, bin, pairs)
    SELECT s.app_id, s.message_id, s.platform, pushtrack_deliver_bin(s.second, w.waves),
           sum(s.pairs)
      FROM unnest(apps, messages) AS u(a, m)
     CROSS JOIN LATERAL (SELECT pushtrack_delivery_waves(u.a, u.m) AS waves) w
      JOIN message_arrival_seconds s ON s.app_id = u.a AND s.message_id = u.m
     WHERE cardinality(w.waves) > 0
     GROUP BY 1, 2, 3, 4
    HAVING sum(s.pairs) <> 0
     ORDER BY 1, 2, 3, 4;
    RETURN cardinality(apps);
END;
$$;
