-- A trial, not applied by `pushtrack migrate` (loadtest/README.md, "Batch p99 at half rate",
-- "The delta tables in 16 partitions"): measured on 2026-12-07 and not kept. To measure it again,
-- copy it into the sql/ folder of a worktree as 022_partitioned_deltas.sql, build that worktree
-- and run it with SERVER_FLAGS="--compaction-parts 16" against a worktree without it. It was
-- written for the schema of 021: check out a commit before sql/022_arrivals_in_report_deltas.sql
-- (7cd7119, say), which dropped deliver_deltas.
--
-- 022: the delta tables the compactor folds in parts are split into 16 partitions by a hash of
-- the message id (issue 17), so that a part's fold reads only its own rows.
--
-- Since 021 a fold takes one part of the messages, but its DELETE read every row of the delta
-- table, the other parts' and the dead rows the earlier folds left until autovacuum, to pick its
-- own: one part of four cost about half a whole fold, not a quarter (loadtest/README.md, "Batch
-- p99 at half rate"). Now each table is partitioned by the message's partition number,
-- `(hashtext(message_id) & 2147483647) % 16`, and part k of p takes the partitions whose number
-- is k modulo p, one partition after the other: each partition has a fold function of its own
-- (made below from one text), whose statements name that partition. A fold of the parent table
-- restricted to the part would be planned again at every call (about 3 ms): PostgreSQL 15 prunes
-- a DELETE's partitions when it plans, not when it runs a cached generic plan.
--
-- The views that read these tables are made again on the new tables, from their own text.

CREATE FUNCTION pushtrack_delta_partition(p_message text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (hashtext(p_message) & 2147483647) % 16
$$;

-- A message's part of `p_parts` (1-16): its partition's number modulo p_parts. Every part of
-- 2, 4, 8 or 16 has as many partitions; of 3 (say), parts have 6, 5 and 5.
CREATE OR REPLACE FUNCTION pushtrack_compaction_part(p_message text, p_parts integer)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_parts <= 1 THEN 0
                ELSE ((hashtext(p_message) & 2147483647) % 16) % p_parts END
$$;

-- The partitions of part p_part of p_parts.
CREATE FUNCTION pushtrack_compaction_partitions(p_part integer, p_parts integer)
RETURNS integer[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_agg(i ORDER BY i) FROM generate_series(0, 15) i
     WHERE p_parts <= 1 OR i % p_parts = p_part
$$;

-- The rows are moved under the compactors' locks: no fold runs meanwhile.
SELECT pg_advisory_xact_lock(hashtext('pushtrack_compact_report_deltas'));
SELECT pg_advisory_xact_lock(hashtext('pushtrack_compact_delivery_deltas'));

CREATE TEMPORARY TABLE pushtrack_022_views ON COMMIT DROP AS
SELECT DISTINCT v.oid::regclass::text AS name, pg_get_viewdef(v.oid) AS definition
  FROM pg_depend d
  JOIN pg_rewrite r ON r.oid = d.objid
  JOIN pg_class v ON v.oid = r.ev_class
 WHERE d.refobjid IN ('report_deltas'::regclass, 'open_latency_deltas'::regclass,
                      'deliver_deltas'::regclass)
   AND v.relkind = 'v';

DO $$
DECLARE
    delta text;
    view record;
BEGIN
    FOREACH delta IN ARRAY ARRAY['report_deltas', 'open_latency_deltas', 'deliver_deltas'] LOOP
        EXECUTE format('ALTER TABLE %I RENAME TO %I', delta, delta || '_022');
        EXECUTE format('ALTER INDEX %I RENAME TO %I', delta || '_by_message',
                       delta || '_022_by_message');
        EXECUTE format(
            'CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING IDENTITY)
             PARTITION BY LIST (((hashtext(message_id) & 2147483647) %% 16))',
            delta, delta || '_022');
        FOR i IN 0..15 LOOP
            -- Rows live about a second: vacuumed and analyzed often, so that each partition
            -- stays a few pages and the planner knows it is small; not truncated by vacuum,
            -- whose lock a streaming replica's report queries would queue behind (013).
            EXECUTE format(
                'CREATE TABLE %I PARTITION OF %I FOR VALUES IN (%s) WITH (
                     autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0,
                     autovacuum_vacuum_insert_threshold = 1000,
                     autovacuum_vacuum_insert_scale_factor = 0,
                     autovacuum_analyze_threshold = 1000, autovacuum_analyze_scale_factor = 0,
                     vacuum_truncate = off)',
                delta || '_' || i, delta, i);
        END LOOP;
        EXECUTE format('CREATE INDEX %I ON %I (app_id, message_id)', delta || '_by_message',
                       delta);
    END LOOP;
    FOR view IN SELECT * FROM pushtrack_022_views LOOP
        EXECUTE format('CREATE OR REPLACE VIEW %s AS %s', view.name, view.definition);
    END LOOP;
END;
$$;

INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale,
    delivered, confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports,
    extension_confirmed)
SELECT app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed,
       foreground, background, opened, clicks, dismissed, duplicate_reports, extension_confirmed
  FROM report_deltas_022;
INSERT INTO open_latency_deltas (app_id, message_id, bin, pairs)
SELECT app_id, message_id, bin, pairs FROM open_latency_deltas_022;
INSERT INTO deliver_deltas (app_id, message_id, platform, second, pairs)
SELECT app_id, message_id, platform, second, pairs FROM deliver_deltas_022;
DROP TABLE report_deltas_022, open_latency_deltas_022, deliver_deltas_022;

-- The partitions' folds, made from one text.
DO $$
BEGIN
    FOR i IN 0..15 LOOP
        EXECUTE format($text$-- One partition's fold of the report deltas (the statements of 021, on partition %1$s of
-- report_deltas and open_latency_deltas); the callers hold the compactor's lock.
CREATE FUNCTION pushtrack_fold_report_partition_%1$s() RETURNS bigint
LANGUAGE plpgsql AS $fold$
DECLARE
    folded bigint;
    latency bigint;
BEGIN
    WITH gone AS (
        DELETE FROM report_deltas_%1$s
        RETURNING app_id, message_id, bucket, platform, app_version, locale, delivered,
                  confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports,
                  extension_confirmed
    ), fine AS (
        -- The finest grouping, once; the coarser aggregates sum these sums.
        SELECT app_id, message_id, bucket, platform, app_version, locale,
               sum(delivered)::bigint AS delivered, sum(confirmed)::bigint AS confirmed,
               sum(foreground)::bigint AS foreground, sum(background)::bigint AS background,
               sum(opened)::bigint AS opened, sum(clicks)::bigint AS clicks,
               sum(dismissed)::bigint AS dismissed,
               sum(duplicate_reports)::bigint AS duplicate_reports,
               sum(extension_confirmed)::bigint AS extension_confirmed
        FROM gone GROUP BY 1, 2, 3, 4, 5, 6
    ), rollups AS (
        INSERT INTO message_rollups AS t (app_id, message_id, bucket, platform, app_version,
            locale, delivered, confirmed, foreground, background, opened, clicks, dismissed,
            duplicate_reports, extension_confirmed)
        SELECT * FROM fine ORDER BY 1, 2, 3, 4, 5, 6
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
        FROM fine GROUP BY 1, 2 ORDER BY 1, 2
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
        FROM fine GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
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
        FROM fine GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
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
        FROM fine GROUP BY 1, 2, 3, 4
        HAVING sum(delivered) <> 0 OR sum(confirmed) <> 0 OR sum(extension_confirmed) <> 0
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (app_id, day, platform, app_version) DO UPDATE
        SET delivered = t.delivered + EXCLUDED.delivered, confirmed = t.confirmed + EXCLUDED.confirmed,
            extension_confirmed = t.extension_confirmed + EXCLUDED.extension_confirmed
    )
    -- Data-modifying CTEs run to completion whether or not the final SELECT reads them.
    SELECT count(*) FROM gone INTO folded;
    WITH gone AS (
        DELETE FROM open_latency_deltas_%1$s RETURNING app_id, message_id, bin, pairs
    ), bins AS (
        INSERT INTO message_open_latency AS t (app_id, message_id, bin, pairs)
        SELECT app_id, message_id, bin, sum(pairs) FROM gone GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (app_id, message_id, bin) DO UPDATE SET pairs = t.pairs + EXCLUDED.pairs
    )
    SELECT count(*) FROM gone INTO latency;
    RETURN folded + latency;
END;
$fold$;

-- One partition's fold of the arrival deltas (021's first statement, on partition %1$s of
-- deliver_deltas); the callers hold the compactor's lock.
CREATE FUNCTION pushtrack_fold_delivery_partition_%1$s() RETURNS bigint
LANGUAGE plpgsql AS $fold$
DECLARE
    folded bigint;
BEGIN
    WITH gone AS (
        DELETE FROM deliver_deltas_%1$s RETURNING app_id, message_id, platform, second, pairs
    ), grouped AS (
        SELECT app_id, message_id, platform, second, sum(pairs) AS pairs
          FROM gone GROUP BY 1, 2, 3, 4
    ), seconds AS (
        INSERT INTO message_arrival_seconds AS t (app_id, message_id, platform, second, pairs)
        SELECT * FROM grouped ORDER BY 1, 2, 3, 4
        ON CONFLICT (app_id, message_id, platform, second) DO UPDATE
        SET pairs = t.pairs + EXCLUDED.pairs
    ), waves AS (
        SELECT m.app_id, m.message_id, pushtrack_delivery_waves(m.app_id, m.message_id) AS waves
          FROM (SELECT DISTINCT app_id, message_id FROM grouped) m
    ), bins AS (
        INSERT INTO message_deliver_latency AS t (app_id, message_id, platform, bin, pairs)
        SELECT g.app_id, g.message_id, g.platform, pushtrack_deliver_bin(g.second, w.waves),
               sum(g.pairs)
          FROM grouped g JOIN waves w USING (app_id, message_id)
         WHERE cardinality(w.waves) > 0
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (app_id, message_id, platform, bin) DO UPDATE
        SET pairs = t.pairs + EXCLUDED.pairs
    )
    SELECT count(*) FROM gone INTO folded;
    RETURN folded;
END;
$fold$;
$text$, i);
    END LOOP;
END;
$$;

-- The folds of 021, a part's partitions one after the other.
CREATE OR REPLACE FUNCTION pushtrack_compact_report_deltas(p_part integer, p_parts integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    partition integer;
    folded bigint := 0;
    more bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('pushtrack_compact_report_deltas')) THEN
        RETURN 0;
    END IF;
    FOREACH partition IN ARRAY pushtrack_compaction_partitions(p_part, p_parts) LOOP
        EXECUTE format('SELECT pushtrack_fold_report_partition_%s()', partition) INTO more;
        folded := folded + more;
    END LOOP;
    RETURN folded;
END;
$$;

CREATE OR REPLACE FUNCTION pushtrack_compact_delivery_deltas(p_part integer, p_parts integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    partition integer;
    folded bigint := 0;
    more bigint;
    apps text[];
    messages text[];
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('pushtrack_compact_delivery_deltas')) THEN
        RETURN 0;
    END IF;
    FOREACH partition IN ARRAY pushtrack_compaction_partitions(p_part, p_parts) LOOP
        EXECUTE format('SELECT pushtrack_fold_delivery_partition_%s()', partition) INTO more;
        folded := folded + more;
    END LOOP;

    WITH queued AS (
        DELETE FROM deliver_rebuilds RETURNING app_id, message_id
    )
    SELECT array_agg(app_id ORDER BY app_id, message_id),
           array_agg(message_id ORDER BY app_id, message_id)
      FROM (SELECT DISTINCT app_id, message_id FROM queued) q
      INTO apps, messages;
    IF apps IS NOT NULL THEN
        DELETE FROM message_deliver_latency l
         USING unnest(apps, messages) AS u(a, m)
         WHERE l.app_id = u.a AND l.message_id = u.m;
        INSERT INTO message_deliver_latency (app_id, message_id, platform, bin, pairs)
        SELECT s.app_id, s.message_id, s.platform, pushtrack_deliver_bin(s.second, w.waves),
               sum(s.pairs)
          FROM unnest(apps, messages) AS u(a, m)
         CROSS JOIN LATERAL (SELECT pushtrack_delivery_waves(u.a, u.m) AS waves) w
          JOIN message_arrival_seconds s ON s.app_id = u.a AND s.message_id = u.m
         WHERE cardinality(w.waves) > 0
         GROUP BY 1, 2, 3, 4
        HAVING sum(s.pairs) <> 0
         ORDER BY 1, 2, 3, 4;
        folded := folded + cardinality(apps);
    END IF;
    RETURN folded;
END;
$$;
