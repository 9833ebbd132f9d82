-- 017: legacy reports that arrived before their send was registered (DESIGN.md section 3: a
-- report without messageId counts for "the closest registered send of that title within
-- 72 hours"). The writers match a legacy report against the sends registered when it is written;
-- one that matched none is stored with outcome 'unattributed'. Registering a send of that title
-- later queues a match here; the server then waits for the writer transactions that may not have
-- seen the send, and attributes the stored reports the new send now explains, unattributed ones
-- and those an earlier send of the title held that it is closer to (their outcome and
-- attributed_message_id, their pairs, the rollups, the conversions and the unattributed counts,
-- 5,000 reports per transaction), and deletes the row once none is left. A row left behind (the
-- server stopped, the registration's 2 s ran out) is taken up by the report compactor.
CREATE TABLE late_send_matches (
    match_id    bigint GENERATED ALWAYS AS IDENTITY,
    app_id      text COLLATE "C" NOT NULL,
    title       text NOT NULL,
    sent_at     timestamptz NOT NULL,
    queued_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, match_id)
);

-- The stored reports a send may explain, found without reading the raw log: only unattributed
-- rows are in it, so writers of messageId reports never pay for it.
CREATE INDEX events_unattributed ON events (app_id, label, event_time)
    WHERE outcome = 'unattributed';

-- Reports stored before this migration that a send registered later explains.
INSERT INTO late_send_matches (app_id, title, sent_at)
SELECT DISTINCT s.app_id, s.title, s.sent_at
  FROM sends s
 WHERE s.title IS NOT NULL
   AND EXISTS (SELECT 1 FROM events e
                WHERE e.outcome = 'unattributed' AND e.app_id = s.app_id
                  AND e.device_id IS NOT NULL
                  AND (e.label = 'push_' || s.title
                       OR (e.label = s.title AND left(s.title, 5) <> 'push_'))
                  AND e.event_time >= s.sent_at
                  AND e.event_time < s.sent_at + interval '72 hours');

-- And reports stored before this migration that an earlier send of the same title holds while a
-- later one, registered after them, is closer.
INSERT INTO late_send_matches (app_id, title, sent_at)
SELECT DISTINCT s.app_id, s.title, s.sent_at
  FROM sends s
 WHERE s.title IS NOT NULL
   AND EXISTS (SELECT 1 FROM sends p
                WHERE p.app_id = s.app_id AND p.title = s.title AND p.message_id <> s.message_id
                  AND p.sent_at <= s.sent_at AND p.sent_at > s.sent_at - interval '72 hours');
