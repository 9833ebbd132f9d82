-- 001: apps and their secrets, campaigns and sends, the idempotency keys and the raw event log.
-- Every unique key carries app_id (and the message where there is one) so that the schema can be
-- distributed by app with Citus later (DESIGN.md section 6).

CREATE TABLE apps (
    app_id      text COLLATE "C" PRIMARY KEY,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Write keys authenticate ingestion (X-App-Key). Only the SHA-256 of a key is stored.
CREATE TABLE write_keys (
    key_hash    bytea PRIMARY KEY CHECK (length(key_hash) = 32),
    app_id      text COLLATE "C" NOT NULL REFERENCES apps ON DELETE CASCADE,
    key_prefix  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX write_keys_app ON write_keys (app_id);

-- Bearer tokens for the report and admin API. app_id NULL means every app.
CREATE TABLE api_tokens (
    token_hash   bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    role         text NOT NULL CHECK (role IN ('read', 'admin')),
    app_id       text COLLATE "C" REFERENCES apps ON DELETE CASCADE,
    token_prefix text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz
);

CREATE TABLE campaigns (
    app_id       text COLLATE "C" NOT NULL REFERENCES apps ON DELETE CASCADE,
    campaign_id  text COLLATE "C" NOT NULL CHECK (length(campaign_id) BETWEEN 1 AND 128),
    name         text,
    notice_type  text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, campaign_id)
);

-- A pushed message. registered = the sender told us about it (POST …/sends); otherwise the row
-- was made from events and campaign_id is what the events carried (or NULL).
CREATE TABLE messages (
    app_id         text COLLATE "C" NOT NULL REFERENCES apps ON DELETE CASCADE,
    message_id     text COLLATE "C" NOT NULL CHECK (length(message_id) BETWEEN 1 AND 128),
    campaign_id    text,
    title          text,
    first_sent_at  timestamptz,
    registered     boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, message_id)
);
-- Legacy attribution: the registered message with this title sent closest before an event.
CREATE INDEX messages_by_title ON messages (app_id, title, first_sent_at) WHERE registered;

-- Each registration of a send (a wave); sends of one message add up.
CREATE TABLE sends (
    send_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id       text COLLATE "C" NOT NULL REFERENCES apps ON DELETE CASCADE,
    campaign_id  text NOT NULL,
    message_id   text NOT NULL,
    title        text,
    sent_at      timestamptz NOT NULL,
    sent         integer NOT NULL CHECK (sent >= 0),
    failed       integer NOT NULL DEFAULT 0 CHECK (failed >= 0),
    platform     text,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sends_by_message ON sends (app_id, message_id);
CREATE INDEX sends_by_campaign ON sends (app_id, campaign_id);

-- Identifier columns use the "C" collation: byte order, the same in every database whatever
-- its locale, and the cheapest to compare in the hot unique indexes.

-- One row per distinct report: "e:<eventId>", or for push events without one the pair, category
-- and client timestamp. A retried request finds its key here and is answered as a duplicate.
CREATE TABLE report_keys (
    app_id      text COLLATE "C" NOT NULL,
    report_key  text COLLATE "C" NOT NULL,
    first_seen  timestamptz NOT NULL,
    PRIMARY KEY (app_id, report_key)
);

-- The raw event log: every report that was accepted, with its dedup outcome, partitioned by the
-- day it was received so that retention drops partitions. Times: received_at (server clock),
-- client_time (as the device said), event_time (effective: skew-corrected, or received_at with
-- time_flag 'future' / 'too_old' / 'defaulted').
CREATE TABLE events (
    event_seq              bigserial,
    received_at            timestamptz NOT NULL,
    app_id                 text COLLATE "C" NOT NULL,
    event_time             timestamptz NOT NULL,
    client_time            timestamptz,
    time_flag              text,
    event_id               text,
    report_key             text,
    page_id                text NOT NULL,
    category               text NOT NULL,
    action                 text,
    label                  text,
    message_id             text COLLATE "C",
    campaign_id            text,
    device_id              text COLLATE "C",
    app_active             boolean,
    source                 text,
    properties             jsonb,
    platform               text,
    os_version             text,
    app_version            text,
    build                  text,
    locale                 text,
    notifications_enabled  boolean,
    outcome                text NOT NULL
) PARTITION BY RANGE (received_at);

-- Rows whose day has no partition yet land here instead of failing; maintenance keeps it empty.
CREATE TABLE events_default PARTITION OF events DEFAULT;
CREATE INDEX events_by_pair ON events (app_id, message_id, device_id);

-- Creates the daily partitions from `from_day` for `days` days. Safe to call from several
-- servers at once (an advisory lock serialises them) and again for days that exist.
CREATE FUNCTION pushtrack_ensure_partitions(from_day date, days integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    d date;
    created integer := 0;
    part text;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('pushtrack_ensure_partitions'));
    FOR i IN 0 .. days - 1 LOOP
        d := from_day + i;
        part := 'events_p' || to_char(d, 'YYYYMMDD');
        IF to_regclass(part) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)',
                part, d::timestamp AT TIME ZONE 'UTC', (d + 1)::timestamp AT TIME ZONE 'UTC');
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END;
$$;
