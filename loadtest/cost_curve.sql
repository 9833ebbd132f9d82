-- The rest of the stored state of loadtest/cost_curve.sh, after report_bench.sql has loaded the
-- benchmark campaign: in the load's app, 1,980 other messages (99 campaigns of 20) of
-- :per_message deliveries each to the load's devices (dev1 .. dev1000000, loadtest/events.lua),
-- one arrival report per delivery in the raw log, and a report key for every stored report.
-- Only what ingestion's statements touch (raw log, keys, deliveries, messages): these messages
-- have no aggregates, so `verify` is not meaningful on this database.
-- Variables: app, t0, per_message.
\set ON_ERROR_STOP on

INSERT INTO campaigns (app_id, campaign_id, name, notice_type)
SELECT :'app', 'other' || c, 'Other ' || c, 'promo' FROM generate_series(0, 98) c;
INSERT INTO messages (app_id, message_id, campaign_id, title, first_sent_at, registered)
SELECT :'app', 'o' || i, 'other' || (i / 20), 'Other ' || i,
       :'t0'::timestamptz - (i % 500) * interval '1 hour', true
  FROM generate_series(0, 1979) i;

INSERT INTO deliveries (app_id, message_id, device_id, first_arrival_at, arrival_reports, foreground,
                        clicks, platform, app_version, locale)
-- The device of delivery g: 1980 * 104729 and 10^6 share only 20, so a message's devices repeat
-- only after 50,000 deliveries (per_message is at most that).
SELECT :'app', 'o' || (g % 1980), 'dev' || (1 + g::bigint * 104729 % 1000000),
       :'t0'::timestamptz - ((g % 1980) % 500) * interval '1 hour' + (g % 3600) * interval '1 second',
       1, g % 3 = 0, 0, CASE WHEN g % 2 = 0 THEN 'ios' ELSE 'android' END, '3.' || (g % 5), 'en-US'
  FROM generate_series(1, 1980 * :per_message) g;

INSERT INTO events (received_at, app_id, event_time, client_time, page_id, category, action,
                    message_id, campaign_id, device_id, app_active, source, platform, app_version,
                    locale, outcome)
SELECT d.first_arrival_at, d.app_id, d.first_arrival_at, d.first_arrival_at, 'push', 'push_arrival',
       'view', d.message_id, m.campaign_id, d.device_id, d.foreground,
       CASE WHEN d.foreground THEN 'foreground' ELSE 'extension' END, d.platform, d.app_version,
       d.locale, 'accepted'
  FROM deliveries d JOIN messages m USING (app_id, message_id)
 WHERE d.app_id = :'app' AND d.message_id LIKE 'o%';

-- A key per report stored here and by report_bench.sql (the raw rows without an eventId: the
-- load's have theirs), as the writers claim them: the 16-byte hash of `e:` and the event's id
-- (sql/019), random as the hash of the load's eventIds is.
INSERT INTO report_keys (app_id, key_hash, first_seen)
SELECT app_id, md5(message_id || '/' || device_id || '/' || category || '/' || event_time)::uuid,
       received_at
  FROM events WHERE event_id IS NULL
ON CONFLICT DO NOTHING;

VACUUM ANALYZE;
