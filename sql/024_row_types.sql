-- 024: the writers bind a group commit's rows as one array of records (issue 17).
--
-- A group commit of up to 200 events bound its rows as one array per column: 13 for the merge
-- of the pairs' delivery states, 25 for the raw rows, 19 for the rollup deltas. PostgreSQL set
-- up a function per array each time the statements ran. The rows now come as one binary array
-- of records of these types per statement, `SELECT (r).* FROM unnest($1::event_row[]) r`: one
-- function per statement, the fields received as their own types.
--
-- A type's fields are the columns its statement sets, in the order, and of the types, that the
-- writer writes them:
-- - event_row: events, EventRows.columns (Sources/PushTrackServer/Ingestion/EventRows.swift);
-- - delivery_row: deliveries, the pair and DeliveryRows.stateColumns, and
-- - report_delta_row: report_deltas, RollupDeltas.apply (both in
--   Sources/PushTrackServer/Ingestion/IngestBatch+Deliveries.swift);
-- whole numbers as bigint.
-- A migration that adds such a column changes the type with it. Servers of an earlier version
-- do not use these types, so they run on after this migration.
CREATE TYPE delivery_row AS (
    app_id text,
    message_id text,
    device_id text,
    first_arrival_at timestamptz,
    arrival_reports bigint,
    foreground boolean,
    extension_report boolean,
    first_click_at timestamptz,
    clicks bigint,
    dismissed_at timestamptz,
    platform text,
    app_version text,
    locale text
);

CREATE TYPE event_row AS (
    received_at timestamptz,
    app_id text,
    event_time timestamptz,
    client_time timestamptz,
    time_flag text,
    event_id text,
    report_key text,
    page_id text,
    category text,
    action text,
    label text,
    message_id text,
    campaign_id text,
    device_id text,
    app_active boolean,
    source text,
    properties jsonb,
    platform text,
    os_version text,
    app_version text,
    build text,
    locale text,
    notifications_enabled boolean,
    outcome text,
    attributed_message_id text
);

CREATE TYPE report_delta_row AS (
    app_id text,
    message_id text,
    bucket timestamptz,
    platform text,
    app_version text,
    locale text,
    delivered bigint,
    confirmed bigint,
    foreground bigint,
    background bigint,
    opened bigint,
    clicks bigint,
    dismissed bigint,
    duplicate_reports bigint,
    extension_confirmed bigint,
    arrival_second bigint,
    arrival_pairs bigint,
    open_bin bigint,
    open_pairs bigint
);
