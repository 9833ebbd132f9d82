-- 010: time to deliver (DESIGN.md section 4, `timeToDeliver`): from the send (the latest
-- registered wave of the message at or before the arrival, else its first) to each pair's
-- earliest confirmed arrival, as a log-scale histogram per message and platform.
--
-- Sends may be registered after the arrivals they explain, so the writers never need to know
-- the waves: they append the arrival times (to the second, per message and platform), which
-- are kept for good in message_arrival_seconds; the histogram message_deliver_latency is derived
-- from them with the waves registered, by the compactor, and rebuilt whole for a message when a
-- send of it is registered (deliver_rebuilds, filled by a trigger on sends). Readers take the
-- histogram of a message with no rebuild pending, else bin its arrival seconds themselves, so a
-- report is exact (to the stated precision) whatever the order of sends and arrivals.

-- Changes of pairs' earliest confirmed arrival (a pair adds 1 at its arrival second, and −1 at
-- the old second when an earlier arrival report comes), appended by the writers.
CREATE TABLE deliver_deltas (
    delta_id    bigint GENERATED ALWAYS AS IDENTITY,
    app_id      text COLLATE "C" NOT NULL,
    message_id  text COLLATE "C" NOT NULL,
    platform    text NOT NULL,
    second      bigint NOT NULL,
    pairs       bigint NOT NULL
);
CREATE INDEX deliver_deltas_by_message ON deliver_deltas (app_id, message_id);
ALTER TABLE deliver_deltas SET (
    autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 1000, autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_analyze_threshold = 1000, autovacuum_analyze_scale_factor = 0);

-- Confirmed pairs per message, platform ('' unknown) and epoch second of their earliest arrival.
CREATE TABLE message_arrival_seconds (
    app_id      text COLLATE "C" NOT NULL,
    message_id  text COLLATE "C" NOT NULL,
    platform    text NOT NULL,
    second      bigint NOT NULL,
    pairs       bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, message_id, platform, second)
);

-- Time to deliver of confirmed pairs per message and platform: bin b holds latencies s with
-- floor(ln(1 + s) / ln(1.02)) = b, as message_open_latency (pushtrack_deliver_bin).
CREATE TABLE message_deliver_latency (
    app_id      text COLLATE "C" NOT NULL,
    message_id  text COLLATE "C" NOT NULL,
    platform    text NOT NULL,
    bin         integer NOT NULL,
    pairs       bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, message_id, platform, bin)
);

-- Messages whose histogram must be rebuilt because a send of theirs was registered (a row per
-- send, duplicates allowed); emptied by the compactor.
CREATE TABLE deliver_rebuilds (
    app_id      text COLLATE "C" NOT NULL,
    message_id  text COLLATE "C" NOT NULL,
    queued_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deliver_rebuilds_by_message ON deliver_rebuilds (app_id, message_id);

CREATE FUNCTION pushtrack_queue_deliver_rebuild() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO deliver_rebuilds (app_id, message_id) VALUES (NEW.app_id, NEW.message_id);
    RETURN NULL;
END;
$$;
CREATE TRIGGER sends_deliver_rebuild AFTER INSERT ON sends
    FOR EACH ROW EXECUTE FUNCTION pushtrack_queue_deliver_rebuild();

-- The send times of a message (epoch seconds, earliest first); empty when none is registered.
CREATE FUNCTION pushtrack_delivery_waves(p_app text, p_message text) RETURNS float8[]
LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(extract(epoch FROM sent_at)::float8 ORDER BY sent_at), '{}')
      FROM sends WHERE app_id = p_app AND message_id = p_message
$$;

-- The histogram bin of a pair that arrived in epoch second p_second, against the waves
-- p_waves (sorted): the latest wave at or before the arrival (a wave in the same second counts
-- as before it), else the first; the arrival is taken at the middle of its second, and a
-- latency below 0 (an arrival before the first send) counts as 0. NULL without waves.
CREATE FUNCTION pushtrack_deliver_bin(p_second bigint, p_waves float8[]) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN cardinality(p_waves) > 0 THEN
        floor(ln(1 + greatest(0, p_second + 0.5 - coalesce(
            (SELECT max(w) FROM unnest(p_waves) w WHERE floor(w) <= p_second), p_waves[1])))
            / ln(1.02))::integer
    END
$$;

-- Folds the visible deliver deltas into message_arrival_seconds and, for messages with sends,
-- into message_deliver_latency; then rebuilds the histograms of the messages queued in
-- deliver_rebuilds from their arrival seconds. Returns the delta rows folded plus the messages
-- rebuilt; 0 at once when another session is folding.
CREATE FUNCTION pushtrack_compact_delivery_deltas() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    folded bigint;
    apps text[];
    messages text[];
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('pushtrack_compact_delivery_deltas')) THEN
        RETURN 0;
    END IF;
    WITH gone AS (
        DELETE FROM deliver_deltas RETURNING app_id, message_id, platform, second, pairs
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

-- The histogram rows of each message as a reader must take them (rows to sum): the folded bins
-- of a message with no rebuild pending, else its arrival seconds binned now; plus its deltas not
-- folded yet, binned now. Messages without a registered send have none.
-- With each message's campaign_id (as in messages: NULL for its own) and first send, so that a
-- campaign's condition on messages applies to it.
CREATE VIEW message_deliver_latency_counters AS
SELECT m.app_id, m.message_id, m.campaign_id, m.first_sent_at, x.platform, x.bin, x.pairs
  FROM messages m
 CROSS JOIN LATERAL (
       SELECT pushtrack_delivery_waves(m.app_id, m.message_id) AS waves,
              EXISTS (SELECT 1 FROM deliver_rebuilds r
                       WHERE r.app_id = m.app_id AND r.message_id = m.message_id) AS stale) w
 CROSS JOIN LATERAL (
       SELECT l.platform, l.bin, l.pairs FROM message_deliver_latency l
        WHERE NOT w.stale AND l.app_id = m.app_id AND l.message_id = m.message_id
       UNION ALL
       SELECT s.platform, pushtrack_deliver_bin(s.second, w.waves), s.pairs
         FROM message_arrival_seconds s
        WHERE w.stale AND s.app_id = m.app_id AND s.message_id = m.message_id
       UNION ALL
       SELECT d.platform, pushtrack_deliver_bin(d.second, w.waves), d.pairs
         FROM deliver_deltas d
        WHERE d.app_id = m.app_id AND d.message_id = m.message_id) x
 WHERE cardinality(w.waves) > 0;

-- Pairs already confirmed when this migration runs start as arrival seconds, and every message
-- with sends is queued for its first histogram.
INSERT INTO message_arrival_seconds (app_id, message_id, platform, second, pairs)
SELECT app_id, message_id, coalesce(platform, ''),
       floor(extract(epoch FROM first_arrival_at))::bigint, count(*)
  FROM deliveries WHERE first_arrival_at IS NOT NULL
 GROUP BY 1, 2, 3, 4;
INSERT INTO deliver_rebuilds (app_id, message_id)
SELECT DISTINCT app_id, message_id FROM sends;
