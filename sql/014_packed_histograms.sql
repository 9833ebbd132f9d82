-- 014: the histograms of a campaign report packed, one row per message (and platform).
--
-- message_open_latency and message_deliver_latency hold a row per bin: some 500 bins per
-- message and platform, 11,000 rows for a campaign of 20 messages; the open curve reads the
-- opens of message_bucket_totals, a row per 5-minute bucket. A campaign report read them all,
-- and reading them (scan, join, one text conversion per number) was most of its time.
-- message_histograms keeps the same numbers packed into one text value per message and
-- platform, so a report reads one row where it read hundreds. The tables stay the truth:
-- `verify` recomputes them from the raw log and checks the packed copy against them.
--
-- Packing a message costs some 2.5 us per bin (about 4 ms for a message of the benchmark), too
-- much to do whenever the compactor changes a bin of it (each second, for every message still
-- receiving reports). So statement triggers on the three tables append what each statement
-- changed, bin by bin, to message_histogram_changes, in the same transaction; readers add those
-- rows to the packed value; and the compactor packs a message again only once its changes are
-- some seconds old or many (pushtrack_pack_changed_histograms). The copy plus its changes equals
-- the tables at every moment.

-- `bins`: the non-zero bins of the histogram in ascending order, as `bin:count` joined by
-- commas (e.g. `20:5,21:7`). Text, not bigint[]: a report reads it as stored, where the array
-- output function formats every element (7 times slower for a campaign's histograms).
CREATE TABLE message_histograms (
    app_id      text COLLATE "C" NOT NULL,
    message_id  text COLLATE "C" NOT NULL,
    -- 'open': time to open (message_open_latency); 'deliver': time to deliver per platform
    -- (message_deliver_latency); 'opens': opened per 5-minute bucket (message_bucket_totals),
    -- the bin being the bucket's start in epoch seconds / 300.
    histogram   text NOT NULL CHECK (histogram IN ('open', 'deliver', 'opens')),
    platform    text NOT NULL, -- '' but for 'deliver' (and there for an unknown platform)
    bins        text NOT NULL,
    PRIMARY KEY (app_id, message_id, histogram, platform)
);

-- What changed in the three tables since a message was last packed: rows to add to its packed
-- value (count may be negative), appended by the triggers below.
CREATE TABLE message_histogram_changes (
    app_id      text COLLATE "C" NOT NULL,
    message_id  text COLLATE "C" NOT NULL,
    histogram   text NOT NULL,
    platform    text NOT NULL,
    bin         bigint NOT NULL,
    count       bigint NOT NULL,
    changed_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX message_histogram_changes_by_message
    ON message_histogram_changes (app_id, message_id);
ALTER TABLE message_histogram_changes SET (
    autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 1000, autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_analyze_threshold = 1000, autovacuum_analyze_scale_factor = 0);

-- Packs again the histograms of kind p_histogram of the messages (p_apps[i], p_messages[i]) from
-- their table, and drops their changes. The caller keeps the tables' writers out meanwhile (the
-- compactors' locks).
CREATE FUNCTION pushtrack_pack_histograms(p_histogram text, p_apps text[], p_messages text[])
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM message_histograms h
     USING unnest(p_apps, p_messages) AS u(a, m)
     WHERE h.histogram = p_histogram AND h.app_id = u.a AND h.message_id = u.m;
    DELETE FROM message_histogram_changes c
     USING unnest(p_apps, p_messages) AS u(a, m)
     WHERE c.histogram = p_histogram AND c.app_id = u.a AND c.message_id = u.m;
    IF p_histogram = 'open' THEN
        INSERT INTO message_histograms (app_id, message_id, histogram, platform, bins)
        SELECT l.app_id, l.message_id, 'open', '',
               string_agg(l.bin || ':' || l.pairs, ',' ORDER BY l.bin)
          FROM (SELECT DISTINCT a, m FROM unnest(p_apps, p_messages) AS u(a, m)) u
          JOIN message_open_latency l ON l.app_id = u.a AND l.message_id = u.m
         WHERE l.pairs <> 0
         GROUP BY 1, 2;
    ELSIF p_histogram = 'opens' THEN
        INSERT INTO message_histograms (app_id, message_id, histogram, platform, bins)
        SELECT b.app_id, b.message_id, 'opens', '',
               string_agg((extract(epoch FROM b.bucket)::bigint / 300) || ':' || b.opened, ','
                          ORDER BY b.bucket)
          FROM (SELECT DISTINCT a, m FROM unnest(p_apps, p_messages) AS u(a, m)) u
          JOIN message_bucket_totals b ON b.app_id = u.a AND b.message_id = u.m
         WHERE b.opened <> 0
         GROUP BY 1, 2;
    ELSE
        INSERT INTO message_histograms (app_id, message_id, histogram, platform, bins)
        SELECT l.app_id, l.message_id, 'deliver', l.platform,
               string_agg(l.bin || ':' || l.pairs, ',' ORDER BY l.bin)
          FROM (SELECT DISTINCT a, m FROM unnest(p_apps, p_messages) AS u(a, m)) u
          JOIN message_deliver_latency l ON l.app_id = u.a AND l.message_id = u.m
         WHERE l.pairs <> 0
         GROUP BY 1, 2, 4;
    END IF;
END;
$$;

-- The statement triggers: what a statement changed in a table, from its transition tables
-- (`new_rows` +, `old_rows` −), appended per message, platform and bin. The arguments: the
-- histogram, and the table's expressions for the platform, the bin and the count.
CREATE FUNCTION pushtrack_note_histogram_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    columns text := format('app_id, message_id, %s AS platform, %s AS bin', TG_ARGV[1], TG_ARGV[2]);
    plus text := format('SELECT %s, %s AS n FROM new_rows', columns, TG_ARGV[3]);
    minus text := format('SELECT %s, -(%s) AS n FROM old_rows', columns, TG_ARGV[3]);
BEGIN
    EXECUTE format(
        'INSERT INTO message_histogram_changes (app_id, message_id, histogram, platform, bin, count) '
        'SELECT app_id, message_id, %L, platform, bin, sum(n) FROM (%s) c '
        'GROUP BY 1, 2, 4, 5 HAVING sum(n) <> 0',
        TG_ARGV[0],
        CASE TG_OP WHEN 'INSERT' THEN plus WHEN 'DELETE' THEN minus
                   ELSE plus || ' UNION ALL ' || minus END);
    RETURN NULL;
END;
$$;

DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT * FROM (VALUES
            ('message_open_latency', 'open', $e$''$e$, 'bin', 'pairs'),
            ('message_deliver_latency', 'deliver', 'platform', 'bin', 'pairs'),
            ('message_bucket_totals', 'opens', $e$''$e$,
             'extract(epoch FROM bucket)::bigint / 300', 'opened')
        ) AS h (name, histogram, platform, bin, count),
        (VALUES ('INSERT', 'NEW TABLE AS new_rows'),
                ('UPDATE', 'OLD TABLE AS old_rows NEW TABLE AS new_rows'),
                ('DELETE', 'OLD TABLE AS old_rows')) AS e (event, tables)
    LOOP
        EXECUTE format(
            'CREATE TRIGGER %I AFTER %s ON %I REFERENCING %s FOR EACH STATEMENT '
            'EXECUTE FUNCTION pushtrack_note_histogram_changes(%L, %L, %L, %L)',
            t.name || '_' || lower(t.event) || '_histogram', t.event, t.name, t.tables,
            t.histogram, t.platform, t.bin, t.count);
    END LOOP;
END;
$$;

-- Packs again the messages whose changes are at least p_after old or number p_changes or more;
-- returns how many (message, histogram) were packed. 0 at once when a compactor is folding:
-- it holds both compactors' locks, so that no bin changes while a message is packed.
CREATE FUNCTION pushtrack_pack_changed_histograms(p_after interval, p_changes integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    due record;
    packed bigint := 0;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('pushtrack_compact_report_deltas'))
       OR NOT pg_try_advisory_xact_lock(hashtext('pushtrack_compact_delivery_deltas')) THEN
        RETURN 0;
    END IF;
    FOR due IN
        SELECT histogram, array_agg(app_id) AS apps, array_agg(message_id) AS messages
          FROM (SELECT histogram, app_id, message_id FROM message_histogram_changes
                 GROUP BY 1, 2, 3
                HAVING min(changed_at) <= now() - p_after OR count(*) >= p_changes) d
         GROUP BY 1
    LOOP
        PERFORM pushtrack_pack_histograms(due.histogram, due.apps, due.messages);
        packed := packed + cardinality(due.apps);
    END LOOP;
    RETURN packed;
END;
$$;

-- What a report reads for the histograms of a message: its packed rows and their changes, plus
-- the rows not folded yet, each as one `bin:count`: the open-latency and bucket deltas; for time to deliver,
-- the arrival seconds binned now when a rebuild is pending (the packed rows are then of the old
-- waves and left out) and the deliver deltas binned now. Rows to add up, per message and
-- platform; messages without a registered send have no time to deliver. With each message's
-- campaign_id (NULL for its own) and first send, for the campaign's condition on messages.
CREATE VIEW message_histogram_parts AS
SELECT m.app_id, m.message_id, m.campaign_id, m.first_sent_at, h.histogram, h.platform, h.bins
  FROM messages m
  JOIN (SELECT app_id, message_id, histogram, platform, bins FROM message_histograms
        UNION ALL
        SELECT app_id, message_id, histogram, platform, bin || ':' || count
          FROM message_histogram_changes) h
    ON h.app_id = m.app_id AND h.message_id = m.message_id
 WHERE h.histogram <> 'deliver'
    OR NOT EXISTS (SELECT 1 FROM deliver_rebuilds r
                    WHERE r.app_id = m.app_id AND r.message_id = m.message_id)
UNION ALL
SELECT m.app_id, m.message_id, m.campaign_id, m.first_sent_at, 'open', '', l.bin || ':' || l.pairs
  FROM messages m
  JOIN open_latency_deltas l ON l.app_id = m.app_id AND l.message_id = m.message_id
UNION ALL
SELECT m.app_id, m.message_id, m.campaign_id, m.first_sent_at, 'opens', '',
       (extract(epoch FROM r.bucket)::bigint / 300) || ':' || r.opened
  FROM messages m
  JOIN report_deltas r ON r.app_id = m.app_id AND r.message_id = m.message_id
 WHERE r.opened <> 0
UNION ALL
SELECT m.app_id, m.message_id, m.campaign_id, m.first_sent_at, 'deliver', x.platform,
       x.bin || ':' || x.pairs
  FROM messages m
 CROSS JOIN LATERAL (SELECT pushtrack_delivery_waves(m.app_id, m.message_id) AS waves) w
 CROSS JOIN LATERAL (
       SELECT s.platform, pushtrack_deliver_bin(s.second, w.waves) AS bin, s.pairs
         FROM message_arrival_seconds s
        WHERE s.app_id = m.app_id AND s.message_id = m.message_id
          AND EXISTS (SELECT 1 FROM deliver_rebuilds r
                       WHERE r.app_id = m.app_id AND r.message_id = m.message_id)
       UNION ALL
       SELECT d.platform, pushtrack_deliver_bin(d.second, w.waves), d.pairs
         FROM deliver_deltas d
        WHERE d.app_id = m.app_id AND d.message_id = m.message_id) x
 WHERE cardinality(w.waves) > 0
   AND (EXISTS (SELECT 1 FROM deliver_deltas d
                 WHERE d.app_id = m.app_id AND d.message_id = m.message_id)
        OR EXISTS (SELECT 1 FROM deliver_rebuilds r
                    WHERE r.app_id = m.app_id AND r.message_id = m.message_id));

-- The histograms stored so far, packed.
SELECT pushtrack_pack_histograms('open', array_agg(app_id), array_agg(message_id))
  FROM (SELECT DISTINCT app_id, message_id FROM message_open_latency) l;
SELECT pushtrack_pack_histograms('deliver', array_agg(app_id), array_agg(message_id))
  FROM (SELECT DISTINCT app_id, message_id FROM message_deliver_latency) l;
SELECT pushtrack_pack_histograms('opens', array_agg(app_id), array_agg(message_id))
  FROM (SELECT DISTINCT app_id, message_id FROM message_bucket_totals) l;
