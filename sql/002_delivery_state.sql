-- 002: the delivery state of each (app, message, device) pair and the rollups that reports read.
-- All of it is written in the same transaction as the raw events (the group commit), so an
-- acknowledged event is already counted. See DESIGN.md section 3 and sql/README.md.

-- One row per (message, device) pair: what its distinct reports say.
CREATE TABLE deliveries (
    app_id            text COLLATE "C" NOT NULL,
    message_id        text COLLATE "C" NOT NULL,
    device_id         text COLLATE "C" NOT NULL,
    first_arrival_at  timestamptz,                 -- earliest arrival report; NULL: none yet
    arrival_reports   integer NOT NULL DEFAULT 0,  -- distinct arrival reports (retries excluded)
    foreground        boolean NOT NULL DEFAULT false,
    first_click_at    timestamptz,
    clicks            integer NOT NULL DEFAULT 0,  -- distinct click reports
    dismissed_at      timestamptz,
    platform          text,
    app_version       text,
    locale            text,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    -- The state just before the last change: one upsert both merges a batch's reports and tells
    -- the writer what the pair was before (PostgreSQL 15 has no RETURNING OLD), which the rollup
    -- deltas need. Under concurrency it is the latest committed state the upsert merged into.
    prev_first_arrival_at  timestamptz,
    prev_arrival_reports   integer NOT NULL DEFAULT 0,
    prev_foreground        boolean NOT NULL DEFAULT false,
    prev_first_click_at    timestamptz,
    prev_clicks            integer NOT NULL DEFAULT 0,
    prev_dismissed_at      timestamptz,
    prev_platform          text,
    prev_app_version       text,
    prev_locale            text,
    PRIMARY KEY (app_id, message_id, device_id)
);

-- Counters per message, 5-minute bucket (UTC, epoch-aligned) and device dimensions ('' when
-- unknown). Delivery counters sit at the bucket of the delivery time (the confirmed arrival,
-- else the first click), opened and clicks at the first click's, dismissed at the dismissal's.
-- Sums over pairs: a report that changes a pair adds the difference of its contributions.
CREATE TABLE message_rollups (
    app_id             text COLLATE "C" NOT NULL,
    message_id         text COLLATE "C" NOT NULL,
    bucket             timestamptz NOT NULL,
    platform           text NOT NULL DEFAULT '',
    app_version        text NOT NULL DEFAULT '',
    locale             text NOT NULL DEFAULT '',
    delivered          bigint NOT NULL DEFAULT 0,
    confirmed          bigint NOT NULL DEFAULT 0,
    foreground         bigint NOT NULL DEFAULT 0,
    background         bigint NOT NULL DEFAULT 0,
    opened             bigint NOT NULL DEFAULT 0,
    clicks             bigint NOT NULL DEFAULT 0,
    dismissed          bigint NOT NULL DEFAULT 0,
    duplicate_reports  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, message_id, bucket, platform, app_version, locale)
);

-- The same counters summed per message: a campaign report reads one row per message.
CREATE TABLE message_totals (
    app_id             text COLLATE "C" NOT NULL,
    message_id         text COLLATE "C" NOT NULL,
    delivered          bigint NOT NULL DEFAULT 0,
    confirmed          bigint NOT NULL DEFAULT 0,
    foreground         bigint NOT NULL DEFAULT 0,
    background         bigint NOT NULL DEFAULT 0,
    opened             bigint NOT NULL DEFAULT 0,
    clicks             bigint NOT NULL DEFAULT 0,
    dismissed          bigint NOT NULL DEFAULT 0,
    duplicate_reports  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, message_id)
);

-- Time to open (confirmed arrival to first click) of opened pairs, as a log-scale histogram:
-- bin b holds latencies s with floor(ln(1 + s) / ln(1.02)) = b (2% wide bins).
CREATE TABLE message_open_latency (
    app_id      text COLLATE "C" NOT NULL,
    message_id  text COLLATE "C" NOT NULL,
    bin         integer NOT NULL,
    pairs       bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, message_id, bin)
);

-- Legacy reports (no messageId) whose title matched no registered send within 72 h.
CREATE TABLE unattributed_reports (
    app_id    text NOT NULL,
    day       date NOT NULL,
    category  text NOT NULL,
    reports   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, day, category)
);

-- The message a legacy report was attributed to (by title); message_id keeps what the client sent.
ALTER TABLE events ADD COLUMN attributed_message_id text;

-- Legacy attribution looks up registered sends by title and time.
CREATE INDEX sends_by_title ON sends (app_id, title, sent_at);
