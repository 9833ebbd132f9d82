-- 014: the histograms of a campaign report packed, one row per message (and platform).
--
-- message_open_latency and message_deliver_latency hold a row per bin: some 500 bins per
-- message and platform, 11,000 rows for a campaign of 20 messages; the open curve reads the
-- opens of message_bucket_totals, a row per 5-minute bucket. A campaign report read them all,
-- and reading them (scan, join, one text conversion per number) was most of its time.
-- message_histograms keeps the same numbers packed into one text value per message and
-- platform, kept equal to those tables by the triggers below in the same transaction as any
-- change to them, so a report reads one row where it read hundreds. The tables stay the truth:
-- `verify` recomputes them from the raw log and checks the packed copy against them.

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

-- Packs again the histograms of kind p_histogram of the messages (p_apps[i], p_messages[i]) from
-- their bin table.
CREATE FUNCTION pushtrack_pack_histograms(p_histogram text, p_apps text[], p_messages text[])
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM message_histograms h
     USING unnest(p_apps, p_messages) AS u(a, m)
     WHERE h.histogram = p_histogram AND h.app_id = u.a AND h.message_id = u.m;
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

-- The statement triggers: the messages a statement changed, from its transition table
-- (`changed`), packed again. TG_ARGV[0] is the histogram. A transition table serves one event
-- only, hence one trigger per event.
CREATE FUNCTION pushtrack_repack_histograms() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    apps text[];
    messages text[];
BEGIN
    SELECT array_agg(app_id), array_agg(message_id) INTO apps, messages
      FROM (SELECT DISTINCT app_id, message_id FROM changed) c;
    IF apps IS NOT NULL THEN
        PERFORM pushtrack_pack_histograms(TG_ARGV[0], apps, messages);
    END IF;
    RETURN NULL;
END;
$$;

DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT * FROM (VALUES ('message_open_latency', 'open'),
                              ('message_deliver_latency', 'deliver'),
                              ('message_bucket_totals', 'opens')) AS h (name, histogram),
                      (VALUES ('INSERT', 'NEW'), ('UPDATE', 'NEW'), ('DELETE', 'OLD')) AS e (event, rows)
    LOOP
        EXECUTE format(
            'CREATE TRIGGER %I AFTER %s ON %I REFERENCING %s TABLE AS changed '
            'FOR EACH STATEMENT EXECUTE FUNCTION pushtrack_repack_histograms(%L)',
            t.name || '_' || lower(t.event) || '_repack', t.event, t.name, t.rows, t.histogram);
    END LOOP;
END;
$$;

-- What a report reads for the histograms of a message: its packed rows, plus the rows not in
-- them yet, each as one `bin:count`: the open-latency and bucket deltas not folded; for time to deliver,
-- the arrival seconds binned now when a rebuild is pending (the packed rows are then of the old
-- waves and left out) and the deliver deltas binned now. Rows to add up, per message and
-- platform; messages without a registered send have no time to deliver. With each message's
-- campaign_id (NULL for its own) and first send, for the campaign's condition on messages.
CREATE VIEW message_histogram_parts AS
SELECT m.app_id, m.message_id, m.campaign_id, m.first_sent_at, h.histogram, h.platform, h.bins
  FROM messages m
  JOIN message_histograms h ON h.app_id = m.app_id AND h.message_id = m.message_id
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
