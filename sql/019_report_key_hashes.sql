-- 019: report_keys holds a 16-byte hash of each report key instead of its text. The text
-- ("e:" and a UUID eventId, about 38 bytes) made an index entry of ~76 bytes with the app; the
-- hash makes one of ~48. Every claim descends that index at a random leaf (eventIds are random
-- UUIDs), so its size against the buffers sets the cost of ingestion once the database holds
-- millions of reports (loadtest/README.md, "Cost curve").
--
-- The hash is the first 16 bytes of the SHA-256 of the key's UTF-8 bytes, as a uuid (fixed
-- width, compared as 16 bytes). The writers compute it in Swift (ReportKeyHash.swift) and bind it
-- in binary; this function is the same computation for SQL (retention, verify), and a test
-- holds the two equal. The raw log keeps the key's text (events.report_key). Two keys of one
-- app with the same hash would make the later report a duplicate: with 128 bits, the chance
-- among a billion keys of an app is about 10^-21.
CREATE FUNCTION pushtrack_report_key_hash(report_key text) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN encode(substr(sha256(convert_to(report_key, 'UTF8')), 1, 16), 'hex')::uuid;

-- Rewrites the table and its primary key (some minutes at 20 M keys, under an exclusive lock:
-- ingestion waits, then resumes).
ALTER TABLE report_keys RENAME COLUMN report_key TO key_hash;
ALTER TABLE report_keys ALTER COLUMN key_hash TYPE uuid USING pushtrack_report_key_hash(key_hash);

-- Retention deletes the keys of a dropped partition's reports by their hash.
CREATE OR REPLACE FUNCTION pushtrack_retire_partition(part text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    day date;
    n bigint;
BEGIN
    IF part !~ '^events_p[0-9]{8}$' THEN
        RAISE EXCEPTION 'not a daily raw-event partition: %', part;
    END IF;
    day := to_date(substr(part, 9), 'YYYYMMDD');
    EXECUTE format(
        'INSERT INTO retired_messages (app_id, message_id)
         SELECT DISTINCT app_id, coalesce(attributed_message_id, message_id) FROM %I
         WHERE outcome NOT IN (''generic'', ''unattributed'')
           AND coalesce(attributed_message_id, message_id) IS NOT NULL
         ORDER BY 1, 2
         ON CONFLICT (app_id, message_id) DO NOTHING', part);
    EXECUTE format(
        'INSERT INTO retired_unattributed AS r (app_id, day, category, reports)
         SELECT app_id, (event_time AT TIME ZONE ''UTC'')::date, category, count(*) FROM %I
         WHERE outcome = ''unattributed''
         GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
         ON CONFLICT (app_id, day, category) DO UPDATE SET reports = r.reports + EXCLUDED.reports',
        part);
    EXECUTE format(
        'DELETE FROM report_keys k USING %I e
         WHERE e.report_key IS NOT NULL AND k.app_id = e.app_id
           AND k.key_hash = pushtrack_report_key_hash(e.report_key)',
        part);
    EXECUTE format('SELECT count(*) FROM %I', part) INTO n;
    INSERT INTO retired_partitions (partition_name, day, events) VALUES (part, day, n)
    ON CONFLICT (partition_name) DO UPDATE SET events = EXCLUDED.events, dropped_at = now();
    RETURN n;
END;
$$;
