-- 003: the report views that the HTTP API, the CLI and analysts (psql, Grafana) read, and two
-- coarser aggregates of message_rollups that keep breakdowns and series fast.
-- Reports read aggregates maintained as events are written (message_totals, and the tables
-- below), never the raw events, so a report costs the same whatever the number of events.
-- A message belongs to messages.campaign_id, or, when that is NULL, to the campaign named after
-- the message id (DESIGN.md section 4). Registering a message moves it by updating that column.
-- Column meanings: sql/README.md.

-- A campaign's messages, by app and campaign or (a token valid for every app) by campaign alone.
CREATE INDEX messages_by_campaign ON messages ((coalesce(campaign_id, message_id)), app_id);
CREATE INDEX campaigns_by_id ON campaigns (campaign_id);

-- One row per message: its sends, counters and rates.
CREATE VIEW message_report AS
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
       coalesce(t.opened, 0)::float8 / nullif(s.sent, 0) AS click_through_rate
FROM messages m
LEFT JOIN message_totals t ON t.app_id = m.app_id AND t.message_id = m.message_id
CROSS JOIN LATERAL (
    SELECT coalesce(sum(x.sent), 0)::bigint AS sent, coalesce(sum(x.failed), 0)::bigint AS failed
    FROM sends x
    WHERE x.app_id = m.app_id AND x.message_id = m.message_id
) s;

-- One row per campaign: campaigns registered (PUT, sends) and campaigns known only from the
-- messages' events, with the sums of their messages and the rates of the sums.
CREATE VIEW campaign_report AS
SELECT x.*,
       x.delivered::float8 / nullif(x.sent, 0) AS delivery_rate,
       x.opened::float8 / nullif(x.delivered, 0) AS open_rate,
       x.opened::float8 / nullif(x.sent, 0) AS click_through_rate
FROM (
    SELECT k.app_id,
           k.campaign_id,
           c.name,
           c.notice_type,
           min(r.sent_at) AS first_sent_at,
           count(r.message_id) AS messages,
           coalesce(sum(r.sent), 0)::bigint AS sent,
           coalesce(sum(r.failed), 0)::bigint AS failed,
           coalesce(sum(r.delivered), 0)::bigint AS delivered,
           coalesce(sum(r.confirmed_arrivals), 0)::bigint AS confirmed_arrivals,
           coalesce(sum(r.inferred_arrivals), 0)::bigint AS inferred_arrivals,
           coalesce(sum(r.foreground_arrivals), 0)::bigint AS foreground_arrivals,
           coalesce(sum(r.background_arrivals), 0)::bigint AS background_arrivals,
           coalesce(sum(r.opened), 0)::bigint AS opened,
           coalesce(sum(r.clicks), 0)::bigint AS clicks,
           coalesce(sum(r.dismissed), 0)::bigint AS dismissed,
           coalesce(sum(r.duplicate_reports), 0)::bigint AS duplicate_reports
    FROM (SELECT app_id, campaign_id FROM campaigns
          UNION
          SELECT app_id, coalesce(campaign_id, message_id) FROM messages) k
    LEFT JOIN campaigns c ON c.app_id = k.app_id AND c.campaign_id = k.campaign_id
    LEFT JOIN message_report r ON r.app_id = k.app_id AND r.campaign_id = k.campaign_id
    GROUP BY k.app_id, k.campaign_id, c.name, c.notice_type
) x;


-- message_rollups has a row per message, 5-minute bucket and device dimensions: 100,000+ rows
-- for a campaign of a million deliveries, too many to sum per request. Reports read it summed
-- over time (message_dimension_totals: breakdowns) and over dimensions (message_bucket_totals:
-- series and the open curve). Both are kept from message_rollups without touching the ingestion
-- path's locks: statement triggers append each change of message_rollups to report_deltas
-- (insert-only, so concurrent writers never wait on each other or deadlock there), and
-- pushtrack_compact_report_deltas() (run every second by `pushtrack serve`, one server at a
-- time) folds the deltas into the two tables. Readers add the deltas not folded yet, so a
-- report is exact at any moment, folded or not.

-- Both have the counters of message_totals (LIKE copies its columns, types and collations).
CREATE TABLE message_dimension_totals (
    LIKE message_totals INCLUDING DEFAULTS,
    platform     text NOT NULL,
    app_version  text NOT NULL,
    locale       text NOT NULL,
    PRIMARY KEY (app_id, message_id, platform, app_version, locale)
);

CREATE TABLE message_bucket_totals (
    LIKE message_totals INCLUDING DEFAULTS,
    bucket  timestamptz NOT NULL,
    PRIMARY KEY (app_id, message_id, bucket)
);

-- Changes of message_rollups not folded yet (its columns): new rows, differences of updated
-- rows, negated deleted rows.
CREATE TABLE report_deltas (
    delta_id  bigint GENERATED ALWAYS AS IDENTITY,
    LIKE message_rollups
);
CREATE INDEX report_deltas_by_message ON report_deltas (app_id, message_id);
-- Rows live about a second: vacuum and analyze it often, so that it stays a few pages and the
-- planner knows it is small.
ALTER TABLE report_deltas SET (
    autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 1000, autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_analyze_threshold = 1000, autovacuum_analyze_scale_factor = 0);

CREATE FUNCTION pushtrack_rollup_deltas() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
            delivered, confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports)
        SELECT app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed,
               foreground, background, opened, clicks, dismissed, duplicate_reports
        FROM new_rows;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
            delivered, confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports)
        SELECT n.app_id, n.message_id, n.bucket, n.platform, n.app_version, n.locale,
               n.delivered - o.delivered, n.confirmed - o.confirmed, n.foreground - o.foreground,
               n.background - o.background, n.opened - o.opened, n.clicks - o.clicks,
               n.dismissed - o.dismissed, n.duplicate_reports - o.duplicate_reports
        FROM new_rows n
        JOIN old_rows o USING (app_id, message_id, bucket, platform, app_version, locale);
    ELSE
        INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
            delivered, confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports)
        SELECT app_id, message_id, bucket, platform, app_version, locale, -delivered, -confirmed,
               -foreground, -background, -opened, -clicks, -dismissed, -duplicate_reports
        FROM old_rows;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER message_rollups_deltas_insert AFTER INSERT ON message_rollups
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pushtrack_rollup_deltas();
CREATE TRIGGER message_rollups_deltas_update AFTER UPDATE ON message_rollups
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pushtrack_rollup_deltas();
CREATE TRIGGER message_rollups_deltas_delete AFTER DELETE ON message_rollups
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pushtrack_rollup_deltas();

-- Rows already in message_rollups (a database migrated after ingestion ran) start as deltas.
INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale, delivered,
    confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports)
SELECT app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed,
       foreground, background, opened, clicks, dismissed, duplicate_reports
FROM message_rollups;

-- Folds the visible deltas into the two tables in one transaction and returns how many it
-- folded; 0 at once when another session is folding. Deltas of transactions still open stay
-- for the next call.
CREATE FUNCTION pushtrack_compact_report_deltas() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    folded bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('pushtrack_compact_report_deltas')) THEN
        RETURN 0;
    END IF;
    WITH gone AS (
        DELETE FROM report_deltas RETURNING *
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
    RETURN folded;
END;
$$;

-- The two coarse aggregates with the deltas not folded yet: what readers use.
CREATE VIEW message_dimension_counters AS
SELECT app_id, message_id, platform, app_version, locale, delivered, confirmed, foreground,
       background, opened, clicks, dismissed, duplicate_reports
FROM message_dimension_totals
UNION ALL
SELECT app_id, message_id, platform, app_version, locale, delivered, confirmed, foreground,
       background, opened, clicks, dismissed, duplicate_reports
FROM report_deltas;

CREATE VIEW message_bucket_counters AS
SELECT app_id, message_id, bucket, delivered, confirmed, foreground, background, opened, clicks,
       dismissed, duplicate_reports
FROM message_bucket_totals
UNION ALL
SELECT app_id, message_id, bucket, delivered, confirmed, foreground, background, opened, clicks,
       dismissed, duplicate_reports
FROM report_deltas;

-- A campaign's counters per 5-minute bucket (UTC start in `time`), for series and Grafana.
-- Delivery counters sit at the delivery time, opened/clicks at the first click, dismissed at the
-- dismissal (see 002).
CREATE VIEW campaign_timeseries AS
SELECT r.bucket AS time,
       m.app_id,
       coalesce(m.campaign_id, m.message_id) AS campaign_id,
       sum(r.delivered)::bigint AS delivered,
       sum(r.confirmed)::bigint AS confirmed_arrivals,
       sum(r.delivered - r.confirmed)::bigint AS inferred_arrivals,
       sum(r.foreground)::bigint AS foreground_arrivals,
       sum(r.background)::bigint AS background_arrivals,
       sum(r.opened)::bigint AS opened,
       sum(r.clicks)::bigint AS clicks,
       sum(r.dismissed)::bigint AS dismissed,
       sum(r.duplicate_reports)::bigint AS duplicate_reports
FROM message_bucket_counters r
JOIN messages m ON m.app_id = r.app_id AND m.message_id = r.message_id
GROUP BY r.bucket, m.app_id, coalesce(m.campaign_id, m.message_id);

-- A campaign's counters by device dimension: one row per (dimension, value), dimension being
-- 'platform', 'app_version' or 'locale'; value '' where the device did not say. (A lateral
-- VALUES rather than GROUPING SETS, so that a WHERE on app_id and campaign_id reaches the
-- index.)
CREATE VIEW campaign_breakdown AS
SELECT c.app_id, c.campaign_id, d.dimension, d.value,
       sum(c.delivered)::bigint AS delivered,
       sum(c.confirmed)::bigint AS confirmed_arrivals,
       sum(c.delivered - c.confirmed)::bigint AS inferred_arrivals,
       sum(c.foreground)::bigint AS foreground_arrivals,
       sum(c.background)::bigint AS background_arrivals,
       sum(c.opened)::bigint AS opened,
       sum(c.clicks)::bigint AS clicks,
       sum(c.dismissed)::bigint AS dismissed,
       sum(c.duplicate_reports)::bigint AS duplicate_reports
FROM (
    -- Per combination of the three dimensions first: a few rows per message.
    SELECT m.app_id, coalesce(m.campaign_id, m.message_id) AS campaign_id, r.platform,
           r.app_version, r.locale, sum(r.delivered) AS delivered, sum(r.confirmed) AS confirmed,
           sum(r.foreground) AS foreground, sum(r.background) AS background,
           sum(r.opened) AS opened, sum(r.clicks) AS clicks, sum(r.dismissed) AS dismissed,
           sum(r.duplicate_reports) AS duplicate_reports
    FROM message_dimension_counters r
    JOIN messages m ON m.app_id = r.app_id AND m.message_id = r.message_id
    GROUP BY 1, 2, 3, 4, 5
) c
CROSS JOIN LATERAL (VALUES ('platform', c.platform), ('app_version', c.app_version),
                           ('locale', c.locale)) AS d (dimension, value)
GROUP BY c.app_id, c.campaign_id, d.dimension, d.value
HAVING sum(c.delivered) <> 0 OR sum(c.confirmed) <> 0 OR sum(c.opened) <> 0 OR sum(c.clicks) <> 0
    OR sum(c.dismissed) <> 0 OR sum(c.duplicate_reports) <> 0;
