-- A measurement for a lead, not applied by `pushtrack migrate` (loadtest/README.md, "The
-- time-to-open bins in the rollup delta rows, and answers resumed together", the lead for (hb),
-- closed since: "Folding by TRUNCATE: not MVCC-safe", loadtest/trials/truncate_snapshot.sh):
-- how much of a fold is deleting its rows one by one, against reading them and emptying the table
-- with TRUNCATE. Run it with psql against a scratch database that `pushtrack migrate` has made
-- (it folds rows of an app 'a' into that database's aggregates and empties report_deltas):
--   psql "$DATABASE_URL" -X -q -f loadtest/trials/fold_by_truncate.sql | grep -E 'Time|fold|deleted|read'
-- Each step runs twice on 20,000 delta rows shaped like a second of (hb)'s load (97 messages,
-- three buckets, arrivals in two seconds): the whole fold, its DELETE … RETURNING alone, and a
-- read of the same rows followed by TRUNCATE. The INSERTs between them refill the table.
\set ON_ERROR_STOP on
\timing on
CREATE TEMP TABLE src AS
SELECT 'a'::text AS app_id, 'm' || (g % 97) AS message_id,
       to_timestamp(1765000000 + (g % 3) * 300) AS bucket, '' AS platform, '' AS app_version, '' AS locale,
       1::bigint AS delivered, 1::bigint AS confirmed, 0::bigint AS foreground, 1::bigint AS background,
       0::bigint AS opened, 0::bigint AS clicks, 0::bigint AS dismissed, 0::bigint AS duplicate_reports,
       0::bigint AS extension_confirmed, (1765000000 + g % 2)::bigint AS arrival_second, 1::bigint AS arrival_pairs
FROM generate_series(1, 20000) g;
-- full fold
INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports, extension_confirmed, arrival_second, arrival_pairs) SELECT * FROM src;
SELECT pushtrack_compact_report_deltas(0, 1) AS full_fold;
INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports, extension_confirmed, arrival_second, arrival_pairs) SELECT * FROM src;
SELECT pushtrack_compact_report_deltas(0, 1) AS full_fold;
-- delete alone
INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports, extension_confirmed, arrival_second, arrival_pairs) SELECT * FROM src;
WITH gone AS (DELETE FROM report_deltas RETURNING *) SELECT count(*) AS deleted FROM gone;
INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports, extension_confirmed, arrival_second, arrival_pairs) SELECT * FROM src;
WITH gone AS (DELETE FROM report_deltas RETURNING *) SELECT count(*) AS deleted FROM gone;
-- read alone + truncate
INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports, extension_confirmed, arrival_second, arrival_pairs) SELECT * FROM src;
SELECT count(*) AS read FROM (SELECT * FROM report_deltas) s;
TRUNCATE report_deltas;
INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports, extension_confirmed, arrival_second, arrival_pairs) SELECT * FROM src;
SELECT count(*) AS read FROM (SELECT * FROM report_deltas) s;
TRUNCATE report_deltas;
