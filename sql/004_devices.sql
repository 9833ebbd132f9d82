-- 004: the apps' push tokens (POST /setting/…), the audience funnel, and influenced opens.
-- Column meanings and the rules: sql/README.md.

-- One row per token and APNs environment of an app. A token belongs to at most one user at a
-- time: user_id is a column of the token's single row, so binding the token to another user
-- (one INSERT … ON CONFLICT DO UPDATE) unbinds the previous one in the same statement, and
-- concurrent calls for one token are applied one after the other on its row lock.
CREATE TABLE devices (
    app_id                 text COLLATE "C" NOT NULL REFERENCES apps ON DELETE CASCADE,
    environment            text NOT NULL CHECK (environment IN ('sandbox', 'production')),
    token                  text COLLATE "C" NOT NULL CHECK (length(token) BETWEEN 8 AND 512),
    platform               text,
    bundle_id              text,
    device_id              text,          -- Device-Info.device_id, the id events carry
    app_version            text,
    locale                 text,          -- the language (Accept-Language's first tag)
    notifications_enabled  boolean,       -- Device-Info.is_notification_enabled, last known
    activated              boolean,       -- isActivated of the last upload
    user_id                text,          -- the bound user; NULL when none
    bound_at               timestamptz,
    first_seen             timestamptz NOT NULL,
    last_seen              timestamptz NOT NULL,
    -- The state just before the last call (as in deliveries): one upsert both applies a call
    -- and tells the same statement what to add to the aggregates below. NULL prev_last_seen:
    -- the row was just created.
    prev_last_seen         timestamptz,
    prev_notifications_enabled boolean,
    prev_user_id           text,
    PRIMARY KEY (app_id, environment, token)
);
CREATE INDEX devices_by_user ON devices (app_id, user_id) WHERE user_id IS NOT NULL;
CREATE INDEX devices_by_last_seen ON devices (last_seen);

-- The audience per app and environment, kept by the token calls and `pushtrack devices prune`
-- so that the funnel reads one row, not the devices.
CREATE TABLE device_totals (
    app_id          text COLLATE "C" NOT NULL,
    environment     text NOT NULL,
    registered      bigint NOT NULL DEFAULT 0,
    permission_on   bigint NOT NULL DEFAULT 0,
    bound           bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, environment)
);

-- Permission over time: per UTC day, the tokens that called that day and how many of them had
-- notification permission on at their last call of the day.
CREATE TABLE device_permission_days (
    app_id          text COLLATE "C" NOT NULL,
    environment     text NOT NULL,
    day             date NOT NULL,
    devices         bigint NOT NULL DEFAULT 0,
    permission_on   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, environment, day)
);

-- Applies one token call and keeps the two aggregates, in one statement (one round trip, one
-- transaction): the device row first, then the day row, then the totals row, the same order for
-- every call, so concurrent calls never deadlock. action: 'upload' keeps the binding, 'bind'
-- binds to p_user (taking the token from any other user), 'unbind' clears it.
CREATE FUNCTION pushtrack_touch_device(
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
            last_seen = greatest(d.last_seen, excluded.last_seen)
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
               (prev_last_seen IS NOT NULL AND prev_user_id IS NOT NULL)::int AS bound_before
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
        INSERT INTO device_totals AS t (app_id, environment, registered, permission_on, bound)
        SELECT app_id, environment, created::int, on_now - on_before, bound_now - bound_before
        FROM change
        ON CONFLICT (app_id, environment) DO UPDATE SET
            registered = t.registered + excluded.registered,
            permission_on = t.permission_on + excluded.permission_on,
            bound = t.bound + excluded.bound
    )
    SELECT user_id, CASE WHEN created THEN NULL ELSE prev_user_id END, created, first_seen,
           last_seen, notifications_enabled
    FROM change;
$$;

-- Deletes the tokens of `p_app` (every app when NULL) not seen since p_before and takes them
-- out of device_totals; returns how many. (device_permission_days keeps its history.)
CREATE FUNCTION pushtrack_prune_devices(p_before timestamptz, p_app text) RETURNS bigint
LANGUAGE sql AS $$
    WITH gone AS (
        DELETE FROM devices
         WHERE last_seen < p_before AND (p_app IS NULL OR app_id = p_app)
        RETURNING app_id, environment, notifications_enabled, user_id
    ), totals AS (
        INSERT INTO device_totals AS t (app_id, environment, registered, permission_on, bound)
        SELECT app_id, environment, -count(*), -count(*) FILTER (WHERE notifications_enabled),
               -count(user_id)
        FROM gone GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (app_id, environment) DO UPDATE SET
            registered = t.registered + excluded.registered,
            permission_on = t.permission_on + excluded.permission_on,
            bound = t.bound + excluded.bound
    )
    SELECT count(*) FROM gone;
$$;

-- Influenced opens. A pair (message, device) is influenced when an app_open event of its device
-- has an effective time within the window (default 12 h) from the pair's confirmed arrival,
-- while the pair has no click; influenced_at is the earliest such app_open the writers saw.
-- A click on the pair retracts it: the pair is opened, and it counts in opened only.
ALTER TABLE deliveries ADD COLUMN influenced_at timestamptz;
-- An app_open finds the pairs it may influence without an index on deliveries (one more index
-- there would slow every batch's delivery upsert by about a fifth): the messages with activity
-- in the 5-minute buckets its window reaches (message_bucket_totals, kept by the compactor off
-- the ingestion path, and the deltas not folded yet), then those pairs of its device by key.
CREATE INDEX message_bucket_totals_by_time ON message_bucket_totals (app_id, bucket, message_id);

-- Marks the pairs that the app_open events (p_apps, p_devices, p_times) influence and returns
-- each marked pair's app and message, for the writers' count in message_influence (called once
-- per batch that has app_open events; see IngestBatch+Influence.swift). p_batch_apps and
-- p_batch_messages are the batch's own messages, whose rollup rows are not written yet. JIT is
-- off: compiling this plan took over a second where running it takes milliseconds.
CREATE FUNCTION pushtrack_mark_influenced(
    p_apps text[], p_devices text[], p_times timestamptz[], p_window_seconds float8,
    p_bucket_seconds float8, p_batch_apps text[], p_batch_messages text[])
RETURNS TABLE (app_id text, message_id text)
LANGUAGE sql SET jit = off AS $$
    WITH o AS (
        SELECT * FROM unnest(p_apps, p_devices, p_times) AS o(a, d, t)
    ), spans AS (
        SELECT a, min(t) - make_interval(secs => p_window_seconds + p_bucket_seconds) AS lo, max(t) AS hi
          FROM o GROUP BY a
    ), recent AS (
        -- Every pair with an arrival in a window has a rollup row in its arrival's
        -- bucket, folded or not yet: a superset of the messages to look at.
        SELECT DISTINCT s.a, b.message_id
          FROM spans s
         CROSS JOIN LATERAL (
               SELECT message_id FROM message_bucket_totals
                WHERE app_id = s.a AND bucket > s.lo AND bucket <= s.hi
               UNION
               SELECT message_id FROM report_deltas
                WHERE app_id = s.a AND bucket > s.lo AND bucket <= s.hi) b
        UNION
        -- This batch's own pairs: their rollup rows come at the end of the transaction.
        SELECT * FROM unnest(p_batch_apps, p_batch_messages)
    ), candidates AS (
        -- One primary-key probe per (open, message): LIMIT 1 keeps the planner from
        -- turning it into a scan of deliveries.
        SELECT x.app_id, x.message_id, x.device_id, min(o.t) AS t
          FROM o
          JOIN recent r ON r.a = o.a
         CROSS JOIN LATERAL (
               SELECT * FROM deliveries x
                WHERE x.app_id = o.a AND x.message_id = r.message_id AND x.device_id = o.d
                LIMIT 1) x
         WHERE x.first_arrival_at IS NOT NULL AND x.first_click_at IS NULL
           AND x.influenced_at IS NULL
           AND x.first_arrival_at <= o.t
           AND x.first_arrival_at > o.t - make_interval(secs => p_window_seconds)
         GROUP BY 1, 2, 3
    ), locked AS (
        SELECT x.app_id, x.message_id, x.device_id, c.t
          FROM deliveries x
          JOIN candidates c USING (app_id, message_id, device_id)
         WHERE x.first_click_at IS NULL AND x.influenced_at IS NULL
         ORDER BY 1, 2, 3
           FOR UPDATE OF x
    )
    UPDATE deliveries x SET influenced_at = l.t
      FROM locked l
     WHERE x.app_id = l.app_id AND x.message_id = l.message_id
       AND x.device_id = l.device_id
    RETURNING x.app_id, x.message_id;
$$;

-- Influenced (and not clicked) pairs per message, kept by the writers in the batch transaction.
CREATE TABLE message_influence (
    app_id            text COLLATE "C" NOT NULL,
    message_id        text COLLATE "C" NOT NULL,
    influenced_opens  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, message_id)
);

-- The report views with influenced_opens appended (existing columns unchanged).
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
LEFT JOIN message_totals t ON t.app_id = m.app_id AND t.message_id = m.message_id
LEFT JOIN message_influence i ON i.app_id = m.app_id AND i.message_id = m.message_id
CROSS JOIN LATERAL (
    SELECT coalesce(sum(x.sent), 0)::bigint AS sent, coalesce(sum(x.failed), 0)::bigint AS failed
    FROM sends x
    WHERE x.app_id = m.app_id AND x.message_id = m.message_id
) s;

CREATE OR REPLACE VIEW campaign_report AS
SELECT x.app_id, x.campaign_id, x.name, x.notice_type, x.first_sent_at, x.messages, x.sent,
       x.failed, x.delivered, x.confirmed_arrivals, x.inferred_arrivals, x.foreground_arrivals,
       x.background_arrivals, x.opened, x.clicks, x.dismissed, x.duplicate_reports,
       x.delivered::float8 / nullif(x.sent, 0) AS delivery_rate,
       x.opened::float8 / nullif(x.delivered, 0) AS open_rate,
       x.opened::float8 / nullif(x.sent, 0) AS click_through_rate,
       x.influenced_opens
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
           coalesce(sum(r.duplicate_reports), 0)::bigint AS duplicate_reports,
           coalesce(sum(r.influenced_opens), 0)::bigint AS influenced_opens
    FROM (SELECT app_id, campaign_id FROM campaigns
          UNION
          SELECT app_id, coalesce(campaign_id, message_id) FROM messages) k
    LEFT JOIN campaigns c ON c.app_id = k.app_id AND c.campaign_id = k.campaign_id
    LEFT JOIN message_report r ON r.app_id = k.app_id AND r.campaign_id = k.campaign_id
    GROUP BY k.app_id, k.campaign_id, c.name, c.notice_type
) x;

-- The audience funnel of an app per environment: registered tokens → permission on, then what
-- was sent to, delivered to and opened on the app's devices (all campaigns).
CREATE VIEW app_audience AS
SELECT a.app_id,
       e.environment,
       coalesce(t.registered, 0) AS registered_devices,
       coalesce(t.permission_on, 0) AS permission_on,
       coalesce(t.bound, 0) AS bound_devices,
       coalesce(t.permission_on, 0)::float8 / nullif(t.registered, 0) AS permission_rate
FROM apps a
CROSS JOIN (VALUES ('sandbox'), ('production')) AS e (environment)
LEFT JOIN device_totals t ON t.app_id = a.app_id AND t.environment = e.environment;

-- The funnel of each campaign: the app's audience (both environments) then the campaign's
-- sent → delivered → opened, with influenced opens beside opened.
CREATE VIEW campaign_audience AS
SELECT r.app_id,
       r.campaign_id,
       coalesce(d.registered, 0)::bigint AS registered_devices,
       coalesce(d.permission_on, 0)::bigint AS permission_on,
       r.sent,
       r.delivered,
       r.opened,
       r.influenced_opens
FROM campaign_report r
LEFT JOIN (SELECT app_id, sum(registered) AS registered, sum(permission_on) AS permission_on
           FROM device_totals GROUP BY app_id) d ON d.app_id = r.app_id;

-- Permission rate per UTC day (a `time` column for Grafana).
CREATE VIEW device_permission_series AS
SELECT (day::timestamp AT TIME ZONE 'UTC') AS time, app_id, environment, devices, permission_on,
       permission_on::float8 / nullif(devices, 0) AS permission_rate
FROM device_permission_days;
