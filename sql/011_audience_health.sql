-- 011: audience health (DESIGN.md sections 4 and 7): dead tokens and the reachable audience,
-- why sends failed, and the delivery health per day, platform and app version that finds a
-- release whose Notification Service Extension stopped reporting. Column meanings, the rules and
-- examples: sql/README.md.
--
-- Stop the servers before applying this (as for 007): the writers' delivery upsert and rollup
-- append gain a column here.

-- Fold what earlier servers left in report_deltas with the compactor of 007, so that the
-- backfills below start from folded aggregates. (The advisory lock is this transaction's until
-- it commits: a compactor still running finds it taken and folds nothing.)
SELECT pg_advisory_xact_lock(hashtext('pushtrack_compact_report_deltas'));
SELECT pushtrack_compact_report_deltas();

-- ---------------------------------------------------------------------------------------------
-- Dead tokens. The sender forwards what APNs and FCM answered (POST /api/v1/devices/invalidations):
-- invalidated_at is the provider's time (`at`), invalid_reason its reason; NULL: the token is
-- valid. A token is invalid exactly while invalidated_at IS NOT NULL: an invalidation older than
-- the token's last upload leaves it valid, and an upload after invalidated_at clears both
-- columns (pushtrack_touch_device below), whichever of the two statements commits first.
ALTER TABLE devices
    ADD COLUMN invalidated_at timestamptz,
    ADD COLUMN invalid_reason text,
    ADD COLUMN prev_invalidated_at timestamptz;

-- Tokens invalid now, per app and environment: reachable = registered - invalidated.
ALTER TABLE device_totals ADD COLUMN invalidated bigint NOT NULL DEFAULT 0;

-- Tokens invalidated per UTC day of `at` and reason (history: a later revival or prune does not
-- take them out).
CREATE TABLE device_invalidation_days (
    app_id       text COLLATE "C" NOT NULL,
    environment  text NOT NULL,
    day          date NOT NULL,
    reason       text COLLATE "C" NOT NULL,
    tokens       bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, environment, day, reason)
);

-- Which device ids the uploads of a token named (Device-Info.device_id): devices.device_id keeps
-- only the latest, and an export or erasure of a device must find every token it used. Deleted
-- with the token (pushtrack devices prune).
CREATE TABLE device_tokens (
    app_id       text COLLATE "C" NOT NULL,
    device_id    text COLLATE "C" NOT NULL,
    environment  text NOT NULL,
    token        text COLLATE "C" NOT NULL,
    first_seen   timestamptz NOT NULL,
    last_seen    timestamptz NOT NULL,
    PRIMARY KEY (app_id, device_id, environment, token),
    FOREIGN KEY (app_id, environment, token) REFERENCES devices ON DELETE CASCADE
);
CREATE INDEX device_tokens_by_token ON device_tokens (app_id, environment, token);
INSERT INTO device_tokens (app_id, device_id, environment, token, first_seen, last_seen)
SELECT app_id, device_id, environment, token, first_seen, last_seen
  FROM devices WHERE device_id IS NOT NULL;

-- pushtrack_touch_device (004) with the dead-token rules and the device link: an upload after the
-- token's invalidation makes it valid again, and device_totals.invalidated follows; the call's
-- device id is linked to the token. Rows are locked in the order of 004 (device row, day row,
-- totals row), then the link row.
CREATE OR REPLACE FUNCTION pushtrack_touch_device(
    p_app text, p_environment text, p_token text, p_action text, p_user text, p_platform text,
    p_bundle_id text, p_device_id text, p_app_version text, p_locale text, p_enabled boolean,
    p_activated boolean, p_now timestamptz)
RETURNS TABLE (user_id text, previous_user_id text, created boolean, first_seen timestamptz,
               last_seen timestamptz, notifications_enabled boolean)
LANGUAGE sql AS $$
    WITH up AS (
        INSERT INTO devices AS d (app_id, environment, token, platform, bundle_id, device_id,
            app_version, locale, notifications_enabled, activated, user_id, bound_at, first_seen,
            last_seen)
        VALUES (p_app, p_environment, p_token, p_platform, p_bundle_id, p_device_id,
            p_app_version, p_locale, p_enabled, p_activated,
            CASE WHEN p_action = 'bind' THEN p_user END,
            CASE WHEN p_action = 'bind' THEN p_now END, p_now, p_now)
        ON CONFLICT (app_id, environment, token) DO UPDATE SET
            prev_last_seen = d.last_seen,
            prev_notifications_enabled = d.notifications_enabled,
            prev_user_id = d.user_id,
            prev_invalidated_at = d.invalidated_at,
            platform = coalesce(excluded.platform, d.platform),
            bundle_id = coalesce(excluded.bundle_id, d.bundle_id),
            device_id = coalesce(excluded.device_id, d.device_id),
            app_version = coalesce(excluded.app_version, d.app_version),
            locale = coalesce(excluded.locale, d.locale),
            notifications_enabled = coalesce(excluded.notifications_enabled, d.notifications_enabled),
            activated = coalesce(excluded.activated, d.activated),
            user_id = CASE p_action WHEN 'bind' THEN p_user WHEN 'unbind' THEN NULL
                               ELSE d.user_id END,
            bound_at = CASE WHEN p_action = 'bind' AND d.user_id IS DISTINCT FROM p_user THEN p_now
                            WHEN p_action = 'unbind' THEN NULL
                            ELSE d.bound_at END,
            last_seen = greatest(d.last_seen, excluded.last_seen),
            -- Seen after its invalidation: valid again.
            invalidated_at = CASE WHEN excluded.last_seen > d.invalidated_at THEN NULL
                                  ELSE d.invalidated_at END,
            invalid_reason = CASE WHEN excluded.last_seen > d.invalidated_at THEN NULL
                                  ELSE d.invalid_reason END
        RETURNING d.*
    ), change AS (
        SELECT up.*,
               prev_last_seen IS NULL AS created,
               (last_seen AT TIME ZONE 'UTC')::date AS day,
               prev_last_seen IS NULL
                   OR (prev_last_seen AT TIME ZONE 'UTC')::date < (last_seen AT TIME ZONE 'UTC')::date
                   AS new_day,
               (notifications_enabled IS TRUE)::int AS on_now,
               (prev_last_seen IS NOT NULL AND prev_notifications_enabled IS TRUE)::int AS on_before,
               (up.user_id IS NOT NULL)::int AS bound_now,
               (prev_last_seen IS NOT NULL AND prev_user_id IS NOT NULL)::int AS bound_before,
               (invalidated_at IS NOT NULL)::int AS invalid_now,
               (prev_last_seen IS NOT NULL AND prev_invalidated_at IS NOT NULL)::int
                   AS invalid_before
        FROM up
    ), days AS (
        INSERT INTO device_permission_days AS p (app_id, environment, day, devices, permission_on)
        SELECT app_id, environment, day, new_day::int,
               CASE WHEN new_day THEN on_now ELSE on_now - on_before END
        FROM change
        ON CONFLICT (app_id, environment, day) DO UPDATE SET
            devices = p.devices + excluded.devices,
            permission_on = p.permission_on + excluded.permission_on
    ), totals AS (
        INSERT INTO device_totals AS t (app_id, environment, registered, permission_on, bound,
                                        invalidated)
        SELECT app_id, environment, created::int, on_now - on_before, bound_now - bound_before,
               invalid_now - invalid_before
        FROM change
        ON CONFLICT (app_id, environment) DO UPDATE SET
            registered = t.registered + excluded.registered,
            permission_on = t.permission_on + excluded.permission_on,
            bound = t.bound + excluded.bound,
            invalidated = t.invalidated + excluded.invalidated
    ), link AS (
        INSERT INTO device_tokens AS l (app_id, device_id, environment, token, first_seen,
                                        last_seen)
        SELECT app_id, p_device_id, environment, token, p_now, p_now
        FROM change WHERE p_device_id IS NOT NULL
        ON CONFLICT (app_id, device_id, environment, token) DO UPDATE SET
            first_seen = least(l.first_seen, excluded.first_seen),
            last_seen = greatest(l.last_seen, excluded.last_seen)
    )
    SELECT user_id, CASE WHEN created THEN NULL ELSE prev_user_id END, created, first_seen,
           last_seen, notifications_enabled
    FROM change;
$$;

-- Marks the known tokens of p_tokens (of one app and environment) invalid with p_reason at p_at,
-- unless the app uploaded one after p_at (it stays valid: seen_after); a token already invalid
-- keeps its first invalidation (already_invalid), so a repeat changes nothing. One call for the
-- whole list (at most 10,000 tokens), whose cost grows with the list, not with the app's tokens,
-- and does not depend on the planner's statistics:
-- 1. each distinct token is one probe of the primary key, in token order (the lock order of
--    pushtrack_touch_device: token rows, then the day row, then the totals row, so concurrent
--    calls never deadlock), locking the row and judging it on its latest committed version;
-- 2. the rows to mark are updated by their tuple ids, which cannot change while they are
--    locked; this is a statement of its own, so its snapshot sees the versions just locked.
-- (A single statement joining the list to `devices` was planned, on a table not analyzed yet, as
-- a nested loop over both lists: 70 s for 10,000 tokens; `token = ANY(…)` as a scan matching
-- every row against the whole list.) JIT is off: it would cost more than the call.
CREATE FUNCTION pushtrack_invalidate_devices(
    p_app text, p_environment text, p_tokens text[], p_reason text, p_at timestamptz)
RETURNS TABLE (invalidated bigint, unknown bigint, already_invalid bigint, seen_after bigint)
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_rows tid[];
    v_known bigint;
    v_already bigint;
    v_after bigint;
    v_marked bigint;
BEGIN
    SELECT array_agg(d.ctid) FILTER (WHERE d.invalidated_at IS NULL AND d.last_seen <= p_at),
           count(*), count(*) FILTER (WHERE d.invalidated_at IS NOT NULL),
           count(*) FILTER (WHERE d.invalidated_at IS NULL AND d.last_seen > p_at)
      INTO v_rows, v_known, v_already, v_after
      FROM (SELECT DISTINCT token FROM unnest(p_tokens) AS t (token) ORDER BY token) t
     CROSS JOIN LATERAL (
           SELECT ctid, last_seen, invalidated_at FROM devices
            WHERE app_id = p_app AND environment = p_environment AND token = t.token
            LIMIT 1
              FOR UPDATE) d;
    UPDATE devices SET invalidated_at = p_at, invalid_reason = p_reason
     WHERE ctid = ANY(coalesce(v_rows, '{}'));
    GET DIAGNOSTICS v_marked = ROW_COUNT;
    IF v_marked > 0 THEN
        INSERT INTO device_invalidation_days AS x (app_id, environment, day, reason, tokens)
        VALUES (p_app, p_environment, (p_at AT TIME ZONE 'UTC')::date, p_reason, v_marked)
        ON CONFLICT (app_id, environment, day, reason)
        DO UPDATE SET tokens = x.tokens + excluded.tokens;
        INSERT INTO device_totals AS t (app_id, environment, invalidated)
        VALUES (p_app, p_environment, v_marked)
        ON CONFLICT (app_id, environment)
        DO UPDATE SET invalidated = t.invalidated + excluded.invalidated;
    END IF;
    RETURN QUERY SELECT v_marked,
        (SELECT count(DISTINCT token) FROM unnest(p_tokens) AS t (token)) - v_known,
        v_already, v_after;
END;
$$;

-- pushtrack_prune_devices (004), taking pruned invalid tokens out of device_totals.invalidated.
CREATE OR REPLACE FUNCTION pushtrack_prune_devices(p_before timestamptz, p_app text) RETURNS bigint
LANGUAGE sql AS $$
    WITH gone AS (
        DELETE FROM devices
         WHERE last_seen < p_before AND (p_app IS NULL OR app_id = p_app)
        RETURNING app_id, environment, notifications_enabled, user_id, invalidated_at
    ), totals AS (
        INSERT INTO device_totals AS t (app_id, environment, registered, permission_on, bound,
                                        invalidated)
        SELECT app_id, environment, -count(*), -count(*) FILTER (WHERE notifications_enabled),
               -count(user_id), -count(invalidated_at)
        FROM gone GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (app_id, environment) DO UPDATE SET
            registered = t.registered + excluded.registered,
            permission_on = t.permission_on + excluded.permission_on,
            bound = t.bound + excluded.bound,
            invalidated = t.invalidated + excluded.invalidated
    )
    SELECT count(*) FROM gone;
$$;

-- The audience views of 004 with the invalid and reachable tokens appended.
CREATE OR REPLACE VIEW app_audience AS
SELECT a.app_id,
       e.environment,
       coalesce(t.registered, 0) AS registered_devices,
       coalesce(t.permission_on, 0) AS permission_on,
       coalesce(t.bound, 0) AS bound_devices,
       coalesce(t.permission_on, 0)::float8 / nullif(t.registered, 0) AS permission_rate,
       coalesce(t.invalidated, 0) AS invalidated_devices,
       coalesce(t.registered - t.invalidated, 0) AS reachable_devices
FROM apps a
CROSS JOIN (VALUES ('sandbox'), ('production')) AS e (environment)
LEFT JOIN device_totals t ON t.app_id = a.app_id AND t.environment = e.environment;

CREATE OR REPLACE VIEW campaign_audience AS
SELECT r.app_id,
       r.campaign_id,
       coalesce(d.registered, 0)::bigint AS registered_devices,
       coalesce(d.permission_on, 0)::bigint AS permission_on,
       r.sent,
       r.delivered,
       r.opened,
       r.influenced_opens,
       coalesce(d.invalidated, 0)::bigint AS invalidated_devices,
       coalesce(d.registered - d.invalidated, 0)::bigint AS reachable_devices
FROM campaign_report r
LEFT JOIN (SELECT app_id, sum(registered) AS registered, sum(permission_on) AS permission_on,
                  sum(invalidated) AS invalidated
           FROM device_totals GROUP BY app_id) d ON d.app_id = r.app_id;

-- Invalidations per UTC day and reason (a `time` column for Grafana).
CREATE VIEW device_invalidation_series AS
SELECT (day::timestamp AT TIME ZONE 'UTC') AS time, app_id, environment, reason, tokens
FROM device_invalidation_days;

-- ---------------------------------------------------------------------------------------------
-- Why sends failed: `failures` of POST …/sends, one row per send and provider reason (APNs
-- `Unregistered`, FCM `UNREGISTERED`, …). Counts of a send sum to at most its `failed`.
CREATE TABLE send_failures (
    send_id     bigint NOT NULL REFERENCES sends ON DELETE CASCADE,
    app_id      text COLLATE "C" NOT NULL,
    message_id  text COLLATE "C" NOT NULL,
    reason      text COLLATE "C" NOT NULL,
    failures    integer NOT NULL CHECK (failures > 0),
    PRIMARY KEY (send_id, reason)
);
CREATE INDEX send_failures_by_message ON send_failures (app_id, message_id);

-- Failures per message and reason, summed over its sends (waves add up), in the message's
-- campaign as message_report places it.
CREATE VIEW message_failure_reasons AS
SELECT f.app_id, coalesce(m.campaign_id, m.message_id) AS campaign_id, f.message_id, f.reason,
       sum(f.failures)::bigint AS failures
FROM send_failures f
JOIN messages m ON m.app_id = f.app_id AND m.message_id = f.message_id
GROUP BY 1, 2, 3, 4;

CREATE VIEW campaign_failure_reasons AS
SELECT app_id, campaign_id, reason, sum(failures)::bigint AS failures
FROM message_failure_reasons
GROUP BY 1, 2, 3;

-- ---------------------------------------------------------------------------------------------
-- Delivery health. extension_report: some arrival report of the pair came from the Notification
-- Service Extension (source = extension); extension_confirmed: the rollup counter of confirmed
-- pairs with such a report, kept like the other counters (the writers' deltas, folded by the
-- compactor), at the delivery time's bucket.
ALTER TABLE deliveries
    ADD COLUMN extension_report boolean NOT NULL DEFAULT false,
    ADD COLUMN prev_extension_report boolean NOT NULL DEFAULT false;
ALTER TABLE report_deltas ADD COLUMN extension_confirmed bigint NOT NULL DEFAULT 0;
ALTER TABLE message_rollups ADD COLUMN extension_confirmed bigint NOT NULL DEFAULT 0;
ALTER TABLE message_totals ADD COLUMN extension_confirmed bigint NOT NULL DEFAULT 0;
ALTER TABLE message_dimension_totals ADD COLUMN extension_confirmed bigint NOT NULL DEFAULT 0;
ALTER TABLE message_bucket_totals ADD COLUMN extension_confirmed bigint NOT NULL DEFAULT 0;

-- The delivery counters per app, UTC day of the delivery, platform and app version ('' when
-- unknown): what GET /api/v1/reports/health reads, a few rows per app and day. Folded from
-- report_deltas by the compactor with the other aggregates.
CREATE TABLE app_health_days (
    app_id               text COLLATE "C" NOT NULL,
    day                  date NOT NULL,
    platform             text NOT NULL,
    app_version          text NOT NULL,
    delivered            bigint NOT NULL DEFAULT 0,
    confirmed            bigint NOT NULL DEFAULT 0,
    extension_confirmed  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, day, platform, app_version)
);
-- The open alerts of every app (/metrics) read the last two days.
CREATE INDEX app_health_days_by_day ON app_health_days (day);

-- Backfill: the folded rollups give delivered and confirmed of the past; the extension flag of
-- the pairs still in `deliveries` comes from their raw arrival reports, and their counter enters
-- the aggregates as deltas (folded below, or by the next compaction). Messages whose raw events
-- or delivery state retention already removed keep extension_confirmed 0.
INSERT INTO app_health_days (app_id, day, platform, app_version, delivered, confirmed)
SELECT app_id, (bucket AT TIME ZONE 'UTC')::date, platform, app_version, sum(delivered),
       sum(confirmed)
  FROM message_rollups
 GROUP BY 1, 2, 3, 4
HAVING sum(delivered) <> 0 OR sum(confirmed) <> 0;

UPDATE deliveries d SET extension_report = true
  FROM (SELECT DISTINCT app_id, coalesce(attributed_message_id, message_id) AS message_id,
               device_id
          FROM events
         WHERE category = 'push_arrival' AND source = 'extension'
           AND outcome NOT IN ('generic', 'unattributed')) e
 WHERE d.app_id = e.app_id AND d.message_id = e.message_id AND d.device_id = e.device_id;

INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
                           extension_confirmed)
SELECT app_id, message_id, date_bin('5 minutes', first_arrival_at, timestamptz '1970-01-01 UTC'),
       coalesce(platform, ''), coalesce(app_version, ''), coalesce(locale, ''), count(*)
  FROM deliveries
 WHERE extension_report AND first_arrival_at IS NOT NULL
 GROUP BY 1, 2, 3, 4, 5, 6;

-- The compactor of 007, folding the new counter, and the day aggregate of the health report.
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
            duplicate_reports, extension_confirmed)
        SELECT app_id, message_id, bucket, platform, app_version, locale, sum(delivered),
               sum(confirmed), sum(foreground), sum(background), sum(opened), sum(clicks),
               sum(dismissed), sum(duplicate_reports), sum(extension_confirmed)
        FROM gone GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
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
        FROM gone GROUP BY 1, 2 ORDER BY 1, 2
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
        FROM gone GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
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
        FROM gone GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
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
        FROM gone GROUP BY 1, 2, 3, 4
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
SELECT pushtrack_compact_report_deltas();

-- The readers' views of 003 and 007 with the new counter appended.
CREATE OR REPLACE VIEW message_dimension_counters AS
SELECT app_id, message_id, platform, app_version, locale, delivered, confirmed, foreground,
       background, opened, clicks, dismissed, duplicate_reports, extension_confirmed
FROM message_dimension_totals
UNION ALL
SELECT app_id, message_id, platform, app_version, locale, delivered, confirmed, foreground,
       background, opened, clicks, dismissed, duplicate_reports, extension_confirmed
FROM report_deltas;

CREATE OR REPLACE VIEW message_bucket_counters AS
SELECT app_id, message_id, bucket, delivered, confirmed, foreground, background, opened, clicks,
       dismissed, duplicate_reports, extension_confirmed
FROM message_bucket_totals
UNION ALL
SELECT app_id, message_id, bucket, delivered, confirmed, foreground, background, opened, clicks,
       dismissed, duplicate_reports, extension_confirmed
FROM report_deltas;

CREATE OR REPLACE VIEW message_rollup_counters AS
SELECT app_id, message_id, bucket, platform, app_version, locale,
       sum(delivered)::bigint AS delivered, sum(confirmed)::bigint AS confirmed,
       sum(foreground)::bigint AS foreground, sum(background)::bigint AS background,
       sum(opened)::bigint AS opened, sum(clicks)::bigint AS clicks,
       sum(dismissed)::bigint AS dismissed, sum(duplicate_reports)::bigint AS duplicate_reports,
       sum(extension_confirmed)::bigint AS extension_confirmed
FROM (
    SELECT app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed,
           foreground, background, opened, clicks, dismissed, duplicate_reports,
           extension_confirmed
    FROM message_rollups
    UNION ALL
    SELECT app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed,
           foreground, background, opened, clicks, dismissed, duplicate_reports,
           extension_confirmed
    FROM report_deltas
) r
GROUP BY 1, 2, 3, 4, 5, 6;

CREATE OR REPLACE VIEW message_total_counters AS
SELECT app_id, message_id,
       sum(delivered)::bigint AS delivered, sum(confirmed)::bigint AS confirmed,
       sum(foreground)::bigint AS foreground, sum(background)::bigint AS background,
       sum(opened)::bigint AS opened, sum(clicks)::bigint AS clicks,
       sum(dismissed)::bigint AS dismissed, sum(duplicate_reports)::bigint AS duplicate_reports,
       sum(extension_confirmed)::bigint AS extension_confirmed
FROM (
    SELECT app_id, message_id, delivered, confirmed, foreground, background, opened, clicks,
           dismissed, duplicate_reports, extension_confirmed
    FROM message_totals
    UNION ALL
    SELECT app_id, message_id, delivered, confirmed, foreground, background, opened, clicks,
           dismissed, duplicate_reports, extension_confirmed
    FROM report_deltas
) t
GROUP BY 1, 2;

-- app_health_days with the deltas not folded yet: rows to sum.
CREATE VIEW app_health_counters AS
SELECT app_id, day, platform, app_version, delivered, confirmed, extension_confirmed
FROM app_health_days
UNION ALL
SELECT app_id, (bucket AT TIME ZONE 'UTC')::date, platform, app_version, delivered, confirmed,
       extension_confirmed
FROM report_deltas;

-- One row per app, UTC day of delivery, platform and app version, with the shares, the
-- baseline (the confirmed share of the app's other versions on that platform and day) and
-- whether the row is an alert: at least 200 delivered, and a confirmed share 20 points or more
-- below the baseline (compared exactly, in integers: 5 × (baseline − share) ≥ 1). A WHERE on
-- app_id and day reaches app_health_days' key (both are the window's partition columns).
CREATE VIEW app_health AS
SELECT (h.day::timestamp AT TIME ZONE 'UTC') AS time,
       h.app_id, h.day, h.platform, h.app_version, h.delivered,
       h.confirmed AS confirmed_arrivals, h.extension_confirmed,
       h.confirmed::float8 / nullif(h.delivered, 0) AS confirmed_share,
       h.extension_confirmed::float8 / nullif(h.confirmed, 0) AS extension_share,
       h.other_delivered, h.other_confirmed,
       h.other_confirmed::float8 / nullif(h.other_delivered, 0) AS baseline,
       (h.delivered >= 200 AND h.other_delivered > 0
        AND 5 * (h.other_confirmed::numeric * h.delivered - h.confirmed::numeric * h.other_delivered)
            >= h.other_delivered::numeric * h.delivered) AS alert
FROM (
    SELECT s.*,
           sum(s.delivered) OVER w - s.delivered AS other_delivered,
           sum(s.confirmed) OVER w - s.confirmed AS other_confirmed
    FROM (SELECT app_id, day, platform, app_version, sum(delivered)::bigint AS delivered,
                 sum(confirmed)::bigint AS confirmed,
                 sum(extension_confirmed)::bigint AS extension_confirmed
            FROM app_health_counters
           GROUP BY 1, 2, 3, 4) s
    WINDOW w AS (PARTITION BY s.app_id, s.day, s.platform)
) h
WHERE h.delivered <> 0 OR h.confirmed <> 0 OR h.extension_confirmed <> 0;
