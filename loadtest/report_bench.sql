-- The report benchmark's data (loadtest/report_bench.sh): one campaign, 20 messages, 1,000,000
-- (message, device) pairs in `deliveries`, the rollup changes that ingestion would have appended
-- for them (report_deltas: report_bench.sh folds them), and the raw events behind them
-- (about 1.5 M rows). Deterministic: every "random" choice is a hash of the pair's number.
-- Variables: app (the app id), t0 (the first send), deliveries (1,000,000 unless set:
-- loadtest/cost_curve.sh sets 10,000,000).
\set ON_ERROR_STOP on
\if :{?deliveries}
\else
\set deliveries 1000000
\endif

INSERT INTO campaigns (app_id, campaign_id, name, notice_type)
VALUES (:'app', 'bench', 'Benchmark', 'promo');
INSERT INTO messages (app_id, message_id, campaign_id, title, first_sent_at, registered)
SELECT :'app', 'm' || i, 'bench', 'Message ' || i, :'t0'::timestamptz + i * interval '1 hour', true
FROM generate_series(0, 19) i;
INSERT INTO sends (app_id, campaign_id, message_id, title, sent_at, sent, failed, platform)
SELECT :'app', 'bench', 'm' || i, 'Message ' || i, :'t0'::timestamptz + i * interval '1 hour',
       30000, 100, p
FROM generate_series(0, 19) i, unnest(ARRAY['ios', 'android']) p;

-- h1, h2, h3: three independent hashes of the pair in 0..1023.
INSERT INTO deliveries (app_id, message_id, device_id, first_arrival_at, arrival_reports, foreground,
                        first_click_at, clicks, dismissed_at, platform, app_version, locale)
SELECT :'app', message_id, device_id,
       CASE WHEN arrived THEN arrival END,
       CASE WHEN arrived THEN 1 + (h2 % 5 = 0)::int ELSE 0 END,
       arrived AND h1 % 3 = 0,
       CASE WHEN clicked THEN arrival + ((h3 * h2) % 36000) * interval '1 second' END,
       CASE WHEN clicked THEN 1 + (h3 % 10 = 0)::int ELSE 0 END,
       CASE WHEN NOT clicked AND h2 % 10 = 1 THEN arrival + interval '1 minute' END,
       CASE WHEN h1 % 2 = 0 THEN 'ios' ELSE 'android' END,
       '3.' || (h2 % 5),
       (ARRAY['en-US', 'zh-CN', 'ja-JP', 'de-DE', 'fr-FR', 'es-ES'])[1 + h3 % 6]
FROM (
    SELECT 'm' || (g % 20) AS message_id, 'd' || g AS device_id, h1, h2, h3,
           h1 < 973 AS arrived, h3 < 256 AS clicked,
           :'t0'::timestamptz + (g % 20) * interval '1 hour'
               + ((h1 * h2) % 7200) * interval '1 second' AS arrival
    FROM (SELECT g, hashint4(g) & 1023 AS h1, hashint4(g + 7777777) & 1023 AS h2,
                 hashint4(g + 3333333) & 1023 AS h3
          FROM generate_series(1, :deliveries) g) hashed
) pairs;

-- The rollups as Rollup.contribution makes them: delivery counters at the delivery time's
-- 5-minute bucket, opened/clicks at the first click's, dismissed at the dismissal's.
CREATE FUNCTION pg_temp.bucket(t timestamptz) RETURNS timestamptz IMMUTABLE LANGUAGE sql AS
    $$ SELECT to_timestamp(floor(extract(epoch FROM t) / 300) * 300) $$;
INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale, delivered,
                           confirmed, foreground, background, opened, clicks, dismissed,
                             duplicate_reports)
SELECT app_id, message_id, bucket, platform, app_version, locale, sum(delivered), sum(confirmed),
       sum(fg), sum(bg), sum(opened), sum(clicks), sum(dismissed), sum(dups)
FROM (
    SELECT app_id, message_id, pg_temp.bucket(coalesce(first_arrival_at, first_click_at)) AS bucket,
           platform, app_version, locale, 1 AS delivered, (first_arrival_at IS NOT NULL)::int AS confirmed,
           (first_arrival_at IS NOT NULL AND foreground)::int AS fg,
           (first_arrival_at IS NOT NULL AND NOT foreground)::int AS bg, 0 AS opened, 0 AS clicks,
           0 AS dismissed, greatest(arrival_reports - 1, 0) AS dups
    FROM deliveries WHERE app_id = :'app' AND coalesce(first_arrival_at, first_click_at) IS NOT NULL
    UNION ALL
    SELECT app_id, message_id, pg_temp.bucket(first_click_at), platform, app_version, locale,
           0, 0, 0, 0, 1, clicks, 0, 0
    FROM deliveries WHERE app_id = :'app' AND first_click_at IS NOT NULL
    UNION ALL
    SELECT app_id, message_id, pg_temp.bucket(dismissed_at), platform, app_version, locale,
           0, 0, 0, 0, 0, 0, 1, 0
    FROM deliveries WHERE app_id = :'app' AND dismissed_at IS NOT NULL
) contributions
GROUP BY 1, 2, 3, 4, 5, 6;

-- Time to open: each opened pair's bin, appended in report_deltas at the key of its open
-- (sql/023; here in rows of their own with zero counters).
INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale, delivered,
                           confirmed, foreground, background, opened, clicks, dismissed,
                           duplicate_reports, open_bin, open_pairs)
SELECT app_id, message_id, pg_temp.bucket(first_click_at), platform, app_version, locale,
       0, 0, 0, 0, 0, 0, 0, 0,
       floor(ln(1 + greatest(0, extract(epoch FROM first_click_at - first_arrival_at))) / ln(1.02))::int,
       count(*)
FROM deliveries
WHERE app_id = :'app' AND first_arrival_at IS NOT NULL AND first_click_at IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6, 15;

-- Time to deliver: each confirmed pair's arrival second, appended in report_deltas at the key of
-- its delivery (sql/022; here in rows of their own with zero counters). The compactor folds and
-- bins them; the sends above queued every message's histogram.
INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale, delivered,
                           confirmed, foreground, background, opened, clicks, dismissed,
                           duplicate_reports, arrival_second, arrival_pairs)
SELECT app_id, message_id, pg_temp.bucket(first_arrival_at), coalesce(platform, ''),
       coalesce(app_version, ''), coalesce(locale, ''), 0, 0, 0, 0, 0, 0, 0, 0,
       floor(extract(epoch FROM first_arrival_at))::bigint, count(*)
FROM deliveries
WHERE app_id = :'app' AND first_arrival_at IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6, 15;

-- Conversions (unless report_bench.sh runs with CONVERSIONS=0): category `purchase`, a purchase
-- 30 minutes after the click of one opened pair in 8 (direct), 2 hours after the arrival of one
-- delivered and unopened pair in 40 (influenced), and one unattributed per 1,000 pairs; values
-- of a few decimals. The counts go in as the writers append them.
\if :conversions
INSERT INTO conversion_settings (app_id, category) VALUES (:'app', 'purchase');
INSERT INTO conversion_apps (app_id, tracking_from) VALUES (:'app', :'t0');
INSERT INTO conversion_events (app_id, device_id, category, event_time, received_at, value,
                               value_property, direct_window_hours, influenced_window_hours, kind,
                               message_id)
SELECT app_id, device_id, 'purchase', t, t, (hashint4(substr(device_id, 2)::int + 3) & 9999) / 100.0,
       'value', 24, 24, kind, message_id
FROM (
    SELECT app_id, device_id, first_click_at + interval '30 minutes' AS t, 'direct' AS kind, message_id
      FROM deliveries WHERE first_click_at IS NOT NULL AND hashint4(substr(device_id, 2)::int) & 7 = 0
    UNION ALL
    SELECT app_id, device_id, first_arrival_at + interval '2 hours', 'influenced', message_id
      FROM deliveries
     WHERE first_click_at IS NULL AND first_arrival_at IS NOT NULL
       AND hashint4(substr(device_id, 2)::int + 1) % 40 = 0
    UNION ALL
    SELECT app_id, device_id, coalesce(first_arrival_at, first_click_at) + interval '40 hours', NULL, NULL
      FROM deliveries
     WHERE coalesce(first_arrival_at, first_click_at) IS NOT NULL
       AND hashint4(substr(device_id, 2)::int + 2) % 1000 = 0
) c;
INSERT INTO conversion_devices (app_id, device_id, last_conversion_at)
SELECT app_id, device_id, max(event_time) FROM conversion_events GROUP BY 1, 2;
INSERT INTO conversion_deltas (app_id, message_id, category, day, direct, influenced, direct_events,
                               influenced_events, direct_value, influenced_value,
                               unattributed_events, unattributed_value)
SELECT app_id, message_id, category, NULL, count(DISTINCT device_id) FILTER (WHERE kind = 'direct'),
       count(DISTINCT device_id) FILTER (WHERE kind = 'influenced'),
       count(*) FILTER (WHERE kind = 'direct'), count(*) FILTER (WHERE kind = 'influenced'),
       coalesce(sum(value) FILTER (WHERE kind = 'direct'), 0),
       coalesce(sum(value) FILTER (WHERE kind = 'influenced'), 0), 0, 0
  FROM conversion_events WHERE message_id IS NOT NULL GROUP BY 1, 2, 3
UNION ALL
SELECT app_id, NULL, category, (event_time AT TIME ZONE 'UTC')::date, 0, 0, 0, 0, 0, 0, count(*), sum(value)
  FROM conversion_events WHERE message_id IS NULL GROUP BY 1, 3, 4;
\endif

-- The raw events behind the pairs: every arrival report (duplicates included), click and
-- dismissal, as the collector stores them.
INSERT INTO events (received_at, app_id, event_time, client_time, page_id, category, action,
                    message_id, campaign_id, device_id, app_active, source, platform, app_version,
                    locale, outcome)
SELECT t, :'app', t, t, 'push', category, action, message_id, 'bench', device_id, app_active, source,
       platform, app_version, locale, 'accepted'
FROM (
    SELECT d.first_arrival_at + (n - 1) * interval '2 seconds' AS t, 'push_arrival' AS category,
           'view' AS action, d.message_id, d.device_id, d.foreground AS app_active,
           CASE WHEN d.foreground THEN 'foreground' ELSE 'extension' END AS source,
           d.platform, d.app_version, d.locale
    FROM deliveries d, generate_series(1, d.arrival_reports) n
    WHERE d.app_id = :'app' AND d.first_arrival_at IS NOT NULL
    UNION ALL
    SELECT d.first_click_at + (n - 1) * interval '30 seconds', 'push_click', 'click', d.message_id,
           d.device_id, true, 'response', d.platform, d.app_version, d.locale
    FROM deliveries d, generate_series(1, d.clicks) n
    WHERE d.app_id = :'app' AND d.first_click_at IS NOT NULL
    UNION ALL
    SELECT d.dismissed_at, 'push_dismiss', 'dismiss', d.message_id, d.device_id, false, 'response',
           d.platform, d.app_version, d.locale
    FROM deliveries d
    WHERE d.app_id = :'app' AND d.dismissed_at IS NOT NULL
) raw;

VACUUM ANALYZE;
