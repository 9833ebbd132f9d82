-- 012: privacy (DESIGN.md section 8): exporting and erasing everything stored about one device
-- of an app. Column meanings and the rules: sql/README.md; the erasure itself is
-- Sources/PushTrackServer/Stores/DeviceErasure.swift.

-- The raw log by device: export and erasure read one device's events (every partition) through
-- it, and its third column still finds a pair's reports. It replaces 001's events_by_pair
-- (app_id, message_id, device_id), which no query needed by message alone: the same columns in
-- another order, so writing the log costs what it did. (Rebuilding it reads the whole log once.)
DROP INDEX events_by_pair;
CREATE INDEX events_by_device ON events (app_id, device_id, message_id);

-- One row per erasure, without the device id: when, in which app, and how many rows went.
CREATE TABLE erasures (
    erasure_id   bigint GENERATED ALWAYS AS IDENTITY,
    app_id       text COLLATE "C" NOT NULL,
    erased_at    timestamptz NOT NULL DEFAULT now(),
    events       bigint NOT NULL,
    deliveries   bigint NOT NULL,
    tokens       bigint NOT NULL,
    report_keys  bigint NOT NULL,
    PRIMARY KEY (app_id, erasure_id)
);

-- What the erased rows had added to the aggregates, summed over every erasure (anonymous: keyed
-- like the aggregates, never by device). The aggregates keep those counts, so reports do not
-- change; `pushtrack verify` adds these to what it recomputes from the raw log that remains.
-- (Erased unattributed legacy reports are added to retired_unattributed, which `verify` already
-- adds for the same reason: their raw events are gone.)
CREATE TABLE erased_rollups (
    LIKE message_rollups INCLUDING DEFAULTS,
    PRIMARY KEY (app_id, message_id, bucket, platform, app_version, locale)
);
CREATE TABLE erased_open_latency (
    LIKE message_open_latency INCLUDING DEFAULTS,
    PRIMARY KEY (app_id, message_id, bin)
);
CREATE TABLE erased_arrival_seconds (
    LIKE message_arrival_seconds INCLUDING DEFAULTS,
    PRIMARY KEY (app_id, message_id, platform, second)
);
CREATE TABLE erased_influence (
    LIKE message_influence INCLUDING DEFAULTS,
    PRIMARY KEY (app_id, message_id)
);
CREATE TABLE erased_device_totals (
    LIKE device_totals INCLUDING DEFAULTS,
    PRIMARY KEY (app_id, environment)
);
