-- 009: conversions (DESIGN.md section 4b): which generic events of an app count as conversions,
-- each conversion event attributed to one (message, device) pair of its device, and the counts
-- per message and category that reports read. Column meanings and the rules: sql/README.md.
--
-- Every per-device row is keyed by (app_id, device_id, …): erasing a device deletes its rows
-- with pushtrack_erase_conversion_device() (at the end).

-- The categories an app declared (PUT /api/v1/apps/{appId}/conversions/{category}). DELETE
-- removes the row: new events of the category are no longer counted; those counted keep their
-- attribution (and are still re-attributed by later clicks and arrivals).
CREATE TABLE conversion_settings (
    app_id                   text COLLATE "C" NOT NULL REFERENCES apps ON DELETE CASCADE,
    category                 text COLLATE "C" NOT NULL CHECK (length(category) BETWEEN 1 AND 64),
    direct_window_hours      integer NOT NULL DEFAULT 24
                             CHECK (direct_window_hours BETWEEN 1 AND 720),
    influenced_window_hours  integer NOT NULL DEFAULT 24
                             CHECK (influenced_window_hours BETWEEN 1 AND 720),
    value_property           text NOT NULL DEFAULT 'value'
                             CHECK (length(value_property) BETWEEN 1 AND 64),
    created_at               timestamptz NOT NULL DEFAULT now(),
    updated_at               timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, category)
);

-- Apps whose writers check the devices of the pairs they change (an app is listed from its first
-- declaration on, and stays listed: conversions already counted are re-attributed even after
-- their category is deleted). Conversions count from tracking_from, a moment after the first
-- declaration by which every server's cached list (refreshed four times a second) has it.
CREATE TABLE conversion_apps (
    app_id         text COLLATE "C" PRIMARY KEY REFERENCES apps ON DELETE CASCADE,
    tracking_from  timestamptz NOT NULL
);

-- One row per device with conversions: the lock that orders a conversion writer and a writer
-- storing a click or arrival of the same device (both lock the row, in key order, after their
-- pairs), and the latest conversion time, so that a writer of push reports knows when a pair it
-- changed may re-attribute one. created_at (clock time of the insert): a row is used once every
-- writer transaction that was running when it was made has ended (IngestBatch+Conversions.swift).
CREATE TABLE conversion_devices (
    app_id              text COLLATE "C" NOT NULL,
    device_id           text COLLATE "C" NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_conversion_at  timestamptz,
    PRIMARY KEY (app_id, device_id)
) WITH (fillfactor = 80);

-- Every conversion event with a device, and the pair it is attributed to now: kind 'direct' or
-- 'influenced' with message_id, or both NULL (unattributed). The windows and value property are
-- the category's when the event was counted; value is the exact sum it adds.
CREATE TABLE conversion_events (
    app_id                   text COLLATE "C" NOT NULL,
    device_id                text COLLATE "C" NOT NULL,
    conversion_id            bigint GENERATED ALWAYS AS IDENTITY,
    category                 text COLLATE "C" NOT NULL,
    event_time               timestamptz NOT NULL,
    received_at              timestamptz NOT NULL,
    value                    numeric NOT NULL DEFAULT 0,
    value_property           text NOT NULL,
    direct_window_hours      integer NOT NULL,
    influenced_window_hours  integer NOT NULL,
    kind                     text CHECK (kind IN ('direct', 'influenced')),
    message_id               text COLLATE "C",
    CHECK ((kind IS NULL) = (message_id IS NULL)),
    PRIMARY KEY (app_id, device_id, conversion_id)
);

-- Counts per message and category (message_id NULL: unattributed, per UTC day of the event),
-- appended by the writers (insert-only: no writer waits on another here) and folded every
-- second by pushtrack_compact_conversion_deltas(). direct/influenced are pairs with at least
-- one such conversion, …_events conversion events, …_value the sums of their values.
CREATE TABLE conversion_deltas (
    delta_id             bigint GENERATED ALWAYS AS IDENTITY,
    app_id               text COLLATE "C" NOT NULL,
    message_id           text COLLATE "C",
    category             text COLLATE "C" NOT NULL,
    day                  date,
    direct               bigint NOT NULL DEFAULT 0,
    influenced           bigint NOT NULL DEFAULT 0,
    direct_events        bigint NOT NULL DEFAULT 0,
    influenced_events    bigint NOT NULL DEFAULT 0,
    direct_value         numeric NOT NULL DEFAULT 0,
    influenced_value     numeric NOT NULL DEFAULT 0,
    unattributed_events  bigint NOT NULL DEFAULT 0,
    unattributed_value   numeric NOT NULL DEFAULT 0
);
CREATE INDEX conversion_deltas_by_message ON conversion_deltas (app_id, message_id);
ALTER TABLE conversion_deltas SET (
    autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 1000, autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_analyze_threshold = 1000, autovacuum_analyze_scale_factor = 0);

CREATE TABLE message_conversions (
    app_id             text COLLATE "C" NOT NULL,
    message_id         text COLLATE "C" NOT NULL,
    category           text COLLATE "C" NOT NULL,
    direct             bigint NOT NULL DEFAULT 0,
    influenced         bigint NOT NULL DEFAULT 0,
    direct_events      bigint NOT NULL DEFAULT 0,
    influenced_events  bigint NOT NULL DEFAULT 0,
    direct_value       numeric NOT NULL DEFAULT 0,
    influenced_value   numeric NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, message_id, category)
);

CREATE TABLE unattributed_conversions (
    app_id    text COLLATE "C" NOT NULL,
    category  text COLLATE "C" NOT NULL,
    day       date NOT NULL,
    events    bigint NOT NULL DEFAULT 0,
    value     numeric NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, category, day)
);

-- What erased devices had contributed (pushtrack_erase_conversion_device): the aggregates keep
-- these anonymous counts, and `pushtrack verify` adds them to what it recomputes.
CREATE TABLE erased_conversions (
    app_id               text COLLATE "C" NOT NULL,
    message_id           text COLLATE "C",
    category             text COLLATE "C" NOT NULL,
    day                  date,
    direct               bigint NOT NULL DEFAULT 0,
    influenced           bigint NOT NULL DEFAULT 0,
    direct_events        bigint NOT NULL DEFAULT 0,
    influenced_events    bigint NOT NULL DEFAULT 0,
    direct_value         numeric NOT NULL DEFAULT 0,
    influenced_value     numeric NOT NULL DEFAULT 0,
    unattributed_events  bigint NOT NULL DEFAULT 0,
    unattributed_value   numeric NOT NULL DEFAULT 0,
    erased_at            timestamptz NOT NULL DEFAULT now()
);

-- The messages of an app with rollup activity on a UTC day: where the writers look for a
-- device's pairs within a conversion window (up to 720 h) without an index of deliveries by
-- device (which would slow every batch). Kept by a trigger on message_bucket_totals, whose rows
-- the compactor creates once per message and 5-minute bucket; the deltas not folded yet are read
-- from report_deltas.
CREATE TABLE app_message_days (
    app_id      text COLLATE "C" NOT NULL,
    day         date NOT NULL,
    message_id  text COLLATE "C" NOT NULL,
    PRIMARY KEY (app_id, day, message_id)
);

CREATE FUNCTION pushtrack_note_message_days() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO app_message_days (app_id, day, message_id)
    SELECT DISTINCT app_id, (bucket AT TIME ZONE 'UTC')::date, message_id FROM new_rows
    ORDER BY 1, 2, 3
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;
CREATE TRIGGER message_bucket_totals_days AFTER INSERT ON message_bucket_totals
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pushtrack_note_message_days();

INSERT INTO app_message_days (app_id, day, message_id)
SELECT DISTINCT app_id, (bucket AT TIME ZONE 'UTC')::date, message_id FROM message_bucket_totals
ON CONFLICT DO NOTHING;

-- The pairs of each device (p_apps, p_devices) with activity between p_from and p_to: the
-- messages active on those days (app_message_days), in the deltas not folded yet, or in the
-- writer's own batch (p_batch_apps, p_batch_messages: their rollup rows come later in the
-- transaction), probed by primary key. A superset of the pairs whose first click or confirmed
-- arrival lies in the span: each such pair has a rollup row in that time's bucket.
CREATE FUNCTION pushtrack_device_pairs(
    p_apps text[], p_devices text[], p_from timestamptz[], p_to timestamptz[],
    p_batch_apps text[], p_batch_messages text[])
RETURNS TABLE (app_id text, device_id text, message_id text, first_arrival_at timestamptz,
               first_click_at timestamptz)
LANGUAGE sql STABLE SET jit = off AS $$
    WITH r AS (
        SELECT * FROM unnest(p_apps, p_devices, p_from, p_to) AS r(a, d, lo, hi)
    ), spans AS (
        SELECT a, min(lo) - interval '5 minutes' AS lo, max(hi) AS hi FROM r GROUP BY a
    ), recent AS (
        SELECT s.a, x.message_id
          FROM spans s
         CROSS JOIN LATERAL (
               SELECT m.message_id FROM app_message_days m
                WHERE m.app_id = s.a
                  AND m.day BETWEEN (s.lo AT TIME ZONE 'UTC')::date AND (s.hi AT TIME ZONE 'UTC')::date
               UNION
               SELECT x.message_id FROM report_deltas x
                WHERE x.app_id = s.a AND x.bucket >= s.lo AND x.bucket <= s.hi) x
        UNION
        SELECT * FROM unnest(p_batch_apps, p_batch_messages)
    ), devices AS (
        SELECT DISTINCT a, d FROM r
    )
    SELECT x.app_id, x.device_id, x.message_id, x.first_arrival_at, x.first_click_at
      FROM devices v
      JOIN recent m ON m.a = v.a
     CROSS JOIN LATERAL (
           SELECT * FROM deliveries x
            WHERE x.app_id = v.a AND x.message_id = m.message_id AND x.device_id = v.d
            LIMIT 1) x
$$;

-- Folds the visible conversion deltas into message_conversions and unattributed_conversions in
-- one transaction; returns how many it folded (0 at once when another session is folding).
CREATE FUNCTION pushtrack_compact_conversion_deltas() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    folded bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('pushtrack_compact_conversion_deltas')) THEN
        RETURN 0;
    END IF;
    WITH gone AS (
        DELETE FROM conversion_deltas RETURNING *
    ), messages AS (
        INSERT INTO message_conversions AS t (app_id, message_id, category, direct, influenced,
            direct_events, influenced_events, direct_value, influenced_value)
        SELECT app_id, message_id, category, sum(direct), sum(influenced), sum(direct_events),
               sum(influenced_events), sum(direct_value), sum(influenced_value)
        FROM gone WHERE message_id IS NOT NULL
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (app_id, message_id, category) DO UPDATE
        SET direct = t.direct + EXCLUDED.direct, influenced = t.influenced + EXCLUDED.influenced,
            direct_events = t.direct_events + EXCLUDED.direct_events,
            influenced_events = t.influenced_events + EXCLUDED.influenced_events,
            direct_value = t.direct_value + EXCLUDED.direct_value,
            influenced_value = t.influenced_value + EXCLUDED.influenced_value
    ), unattributed AS (
        INSERT INTO unattributed_conversions AS t (app_id, category, day, events, value)
        SELECT app_id, category, day, sum(unattributed_events), sum(unattributed_value)
        FROM gone WHERE message_id IS NULL
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (app_id, category, day) DO UPDATE
        SET events = t.events + EXCLUDED.events, value = t.value + EXCLUDED.value
    )
    SELECT count(*) FROM gone INTO folded;
    RETURN folded;
END;
$$;

-- What readers use: the folded counts with the deltas not folded yet (rows to sum).
CREATE VIEW message_conversion_counters AS
SELECT app_id, message_id, category, direct, influenced, direct_events, influenced_events,
       direct_value, influenced_value
FROM message_conversions
UNION ALL
SELECT app_id, message_id, category, direct, influenced, direct_events, influenced_events,
       direct_value, influenced_value
FROM conversion_deltas WHERE message_id IS NOT NULL;

CREATE VIEW unattributed_conversion_counters AS
SELECT app_id, category, day, events, value FROM unattributed_conversions
UNION ALL
SELECT app_id, category, day, unattributed_events, unattributed_value
FROM conversion_deltas WHERE message_id IS NULL;

-- One row per message and conversion category of its app, with the rates of DESIGN.md 4b:
-- direct_rate = direct / opened, influenced_rate = influenced / (delivered − opened).
CREATE VIEW message_conversion_report AS
SELECT r.app_id, r.campaign_id, r.message_id, s.category,
       coalesce(c.direct, 0)::bigint AS direct,
       coalesce(c.influenced, 0)::bigint AS influenced,
       coalesce(c.direct_events, 0)::bigint AS direct_events,
       coalesce(c.influenced_events, 0)::bigint AS influenced_events,
       coalesce(c.direct_value, 0) AS direct_value,
       coalesce(c.influenced_value, 0) AS influenced_value,
       coalesce(c.direct, 0)::float8 / nullif(r.opened, 0) AS direct_rate,
       coalesce(c.influenced, 0)::float8 / nullif(r.delivered - r.opened, 0) AS influenced_rate
FROM message_report r
JOIN conversion_settings s ON s.app_id = r.app_id
LEFT JOIN LATERAL (
    SELECT sum(x.direct) AS direct, sum(x.influenced) AS influenced,
           sum(x.direct_events) AS direct_events, sum(x.influenced_events) AS influenced_events,
           sum(x.direct_value) AS direct_value, sum(x.influenced_value) AS influenced_value
    FROM message_conversion_counters x
    WHERE x.app_id = r.app_id AND x.message_id = r.message_id AND x.category = s.category
) c ON true;

-- One row per campaign and conversion category of its app: the sums of its messages, and the
-- rates of the sums.
CREATE VIEW campaign_conversions AS
SELECT r.app_id, r.campaign_id, s.category,
       coalesce(sum(c.direct), 0)::bigint AS direct,
       coalesce(sum(c.influenced), 0)::bigint AS influenced,
       coalesce(sum(c.direct_events), 0)::bigint AS direct_events,
       coalesce(sum(c.influenced_events), 0)::bigint AS influenced_events,
       coalesce(sum(c.direct_value), 0) AS direct_value,
       coalesce(sum(c.influenced_value), 0) AS influenced_value,
       coalesce(sum(c.direct), 0)::float8 / nullif(r.opened, 0) AS direct_rate,
       coalesce(sum(c.influenced), 0)::float8 / nullif(r.delivered - r.opened, 0) AS influenced_rate
FROM campaign_report r
JOIN conversion_settings s ON s.app_id = r.app_id
LEFT JOIN message_conversion_report c
       ON c.app_id = r.app_id AND c.campaign_id = r.campaign_id AND c.category = s.category
GROUP BY r.app_id, r.campaign_id, s.category, r.opened, r.delivered;

-- Unattributed conversion events per app, category and UTC day (a `time` column for Grafana).
CREATE VIEW unattributed_conversion_series AS
SELECT (day::timestamp AT TIME ZONE 'UTC') AS time, app_id, category,
       sum(events)::bigint AS events, sum(value) AS value
FROM unattributed_conversion_counters
GROUP BY day, app_id, category;

-- Erases the conversion rows of one device of an app (DESIGN.md section 8): deletes its
-- conversion_events and conversion_devices rows and records what they contributed in
-- erased_conversions, so that the aggregates keep their anonymous counts and `verify` stays
-- clean. Returns the conversion events erased. Locks the device row first, as the writers do.
CREATE FUNCTION pushtrack_erase_conversion_device(p_app text, p_device text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    erased bigint;
BEGIN
    PERFORM 1 FROM conversion_devices
     WHERE app_id = p_app AND device_id = p_device FOR NO KEY UPDATE;
    WITH gone AS (
        DELETE FROM conversion_events WHERE app_id = p_app AND device_id = p_device
        RETURNING *
    ), attributed AS (
        INSERT INTO erased_conversions (app_id, message_id, category, direct, influenced,
            direct_events, influenced_events, direct_value, influenced_value)
        SELECT app_id, message_id, category,
               (count(*) FILTER (WHERE kind = 'direct') > 0)::int,
               (count(*) FILTER (WHERE kind = 'influenced') > 0)::int,
               count(*) FILTER (WHERE kind = 'direct'), count(*) FILTER (WHERE kind = 'influenced'),
               coalesce(sum(value) FILTER (WHERE kind = 'direct'), 0),
               coalesce(sum(value) FILTER (WHERE kind = 'influenced'), 0)
        FROM gone WHERE message_id IS NOT NULL GROUP BY 1, 2, 3
    ), unattributed AS (
        INSERT INTO erased_conversions (app_id, category, day, unattributed_events,
            unattributed_value)
        SELECT app_id, category, (event_time AT TIME ZONE 'UTC')::date, count(*), sum(value)
        FROM gone WHERE message_id IS NULL GROUP BY 1, 2, 3
    )
    SELECT count(*) FROM gone INTO erased;
    DELETE FROM conversion_devices WHERE app_id = p_app AND device_id = p_device;
    RETURN erased;
END;
$$;
