-- 021: the report compactor folds the deltas in parts, a share of the messages at a time (issue 17).
--
-- A fold takes every delta appended since the last one. Under a heavy load that is one burst of
-- PostgreSQL CPU a second: with 50-event batches at half their maximum rate (about 23,000 events
-- a second), 100-200 ms of one of the machine's two cores, and the requests committed meanwhile
-- waited (the batch p99 at half rate was 43 ms with the compactor folding every second, 8.7 ms
-- with it idle: loadtest/README.md, "Batch p99 at half rate"). Folding every quarter second
-- instead cut the bursts but doubled the fold's CPU per event, since each fold upserts every
-- aggregate row its deltas touch, and most rows are touched in every quarter second.
--
-- So a fold now takes one part of the messages: the compactor folds part 0 of `parts`, then part
-- 1, ..., one every interval / parts, and each message's deltas are still folded once per
-- interval. Each aggregate row is upserted as often as before; only the scan of the delta tables
-- repeats. The argument-less functions fold every part, as before (tests, tools).
-- A message's part is a hash of its id, so its rows (every delta table) are in the same part.
-- Readers add the deltas not folded yet, so nothing a report says depends on the parts.

CREATE FUNCTION pushtrack_compaction_part(p_message text, p_parts integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_parts <= 1 THEN 0 ELSE (hashtext(p_message) & 2147483647) % p_parts END
$$;

CREATE FUNCTION pushtrack_compact_report_deltas(p_part integer, p_parts integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    folded bigint;
    latency bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('pushtrack_compact_report_deltas')) THEN
        RETURN 0;
    END IF;
    WITH gone AS (
        DELETE FROM report_deltas
         WHERE pushtrack_compaction_part(message_id, p_parts) = p_part
        RETURNING app_id, message_id, bucket, platform, app_version, locale, delivered,
                  confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports,
                  extension_confirmed
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

CREATE FUNCTION pushtrack_compact_delivery_deltas(p_part integer, p_parts integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    folded bigint;
    apps text[];
    messages text[];
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('pushtrack_compact_delivery_deltas')) THEN
        RETURN 0;
    END IF;
    WITH gone AS (
        DELETE FROM deliver_deltas
         WHERE pushtrack_compaction_part(message_id, p_parts) = p_part
        RETURNING app_id, message_id, platform, second, pairs
    ), grouped AS (
        SELECT app_id, message_id, platform, second, sum(pairs) AS pairs
          FROM gone GROUP BY 1, 2, 3, 4
    ), seconds AS (
        INSERT INTO message_arrival_seconds AS t (app_id, message_id, platform, second, pairs)
        SELECT * FROM grouped ORDER BY 1, 2, 3, 4
        ON CONFLICT (app_id, message_id, platform, second) DO UPDATE
        SET pairs = t.pairs + EXCLUDED.pairs
    ), waves AS (
        SELECT m.app_id, m.message_id, pushtrack_delivery_waves(m.app_id, m.message_id) AS waves
          FROM (SELECT DISTINCT app_id, message_id FROM grouped) m
    ), bins AS (
        INSERT INTO message_deliver_latency AS t (app_id, message_id, platform, bin, pairs)
        SELECT g.app_id, g.message_id, g.platform, pushtrack_deliver_bin(g.second, w.waves),
               sum(g.pairs)
          FROM grouped g JOIN waves w USING (app_id, message_id)
         WHERE cardinality(w.waves) > 0
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (app_id, message_id, platform, bin) DO UPDATE
        SET pairs = t.pairs + EXCLUDED.pairs
    )
    SELECT count(*) FROM gone INTO folded;

    WITH queued AS (
        DELETE FROM deliver_rebuilds RETURNING app_id, message_id
    )
    SELECT array_agg(app_id ORDER BY app_id, message_id),
           array_agg(message_id ORDER BY app_id, message_id)
      FROM (SELECT DISTINCT app_id, message_id FROM queued) q
      INTO apps, messages;
    IF apps IS NOT NULL THEN
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
        folded := folded + cardinality(apps);
    END IF;
    RETURN folded;
END;
$$;

CREATE OR REPLACE FUNCTION pushtrack_compact_report_deltas() RETURNS bigint
LANGUAGE sql AS $$ SELECT pushtrack_compact_report_deltas(0, 1) $$;

CREATE OR REPLACE FUNCTION pushtrack_compact_delivery_deltas() RETURNS bigint
LANGUAGE sql AS $$ SELECT pushtrack_compact_delivery_deltas(0, 1) $$;
