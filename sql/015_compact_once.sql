-- 015: the report compactor groups the deltas it folds once (issue 17).
--
-- pushtrack_compact_report_deltas (sql/011) grouped the rows it deleted from report_deltas five
-- times, once per aggregate: five sorts of every delta row. A second of single-event load leaves
-- about a row per event there, so each sort took a few thousand rows down to a few hundred
-- groups. Now the rows are grouped once by the finest key (message_rollups': message, bucket and
-- dimensions) and the coarser aggregates (message_totals, message_dimension_totals,
-- message_bucket_totals, app_health_days) sum those sums: the same numbers, since a sum of sums
-- is the sum, from one pass over the deltas. Everything else is as in 011. Under single-event
-- load this took the compactor from 12.3 to 8.8 us of PostgreSQL CPU per event (three pairs of
-- `BATCH=1 loadtest/statement_cpu.sh`, loadtest/README.md).

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
        DELETE FROM report_deltas
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
