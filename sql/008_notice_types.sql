-- 008: notice types as the apps' push model carries them (DESIGN.md section 4): an integer code
-- (10 activity, 20 news, 30 system, 40 other, 50 account) or a string, given back as it was
-- given, with a name beside it. Column meanings and examples: sql/README.md.

-- notice_type keeps the value as text (the code in decimal, or the string), so that queries
-- written against it keep working; notice_type_code is set when it was given as an integer,
-- which tells the code 10 from the string '10'; notice_type_name is the name the server gives
-- it (the code's name, NULL for an unknown code, the string itself for a string).
ALTER TABLE campaigns
    ADD COLUMN notice_type_code integer CHECK (notice_type_code >= 0),
    ADD COLUMN notice_type_name text,
    ADD CONSTRAINT campaigns_notice_type_code_is_the_text
        CHECK (notice_type_code IS NULL OR notice_type = notice_type_code::text);

-- Until now every notice type was a string: its name is itself.
UPDATE campaigns SET notice_type_name = notice_type WHERE notice_type IS NOT NULL;

-- campaign_report (004) with the two new columns at the end.
CREATE OR REPLACE VIEW campaign_report AS
SELECT x.app_id, x.campaign_id, x.name, x.notice_type, x.first_sent_at, x.messages, x.sent,
       x.failed, x.delivered, x.confirmed_arrivals, x.inferred_arrivals, x.foreground_arrivals,
       x.background_arrivals, x.opened, x.clicks, x.dismissed, x.duplicate_reports,
       x.delivered::float8 / nullif(x.sent, 0) AS delivery_rate,
       x.opened::float8 / nullif(x.delivered, 0) AS open_rate,
       x.opened::float8 / nullif(x.sent, 0) AS click_through_rate,
       x.influenced_opens,
       x.notice_type_code,
       x.notice_type_name
FROM (
    SELECT k.app_id,
           k.campaign_id,
           c.name,
           c.notice_type,
           c.notice_type_code,
           c.notice_type_name,
           min(r.sent_at) AS first_sent_at,
           count(r.message_id) AS messages,
           coalesce(sum(r.sent), 0)::bigint AS sent,
           coalesce(sum(r.failed), 0)::bigint AS failed,
           coalesce(sum(r.delivered), 0)::bigint AS delivered,
           coalesce(sum(r.confirmed_arrivals), 0)::bigint AS confirmed_arrivals,
           coalesce(sum(r.inferred_arrivals), 0)::bigint AS inferred_arrivals,
           coalesce(sum(r.foreground_arrivals), 0)::bigint AS foreground_arrivals,
           coalesce(sum(r.background_arrivals), 0)::bigint AS background_arrivals,
           coalesce(sum(r.opened), 0)::bigint AS opened,
           coalesce(sum(r.clicks), 0)::bigint AS clicks,
           coalesce(sum(r.dismissed), 0)::bigint AS dismissed,
           coalesce(sum(r.duplicate_reports), 0)::bigint AS duplicate_reports,
           coalesce(sum(r.influenced_opens), 0)::bigint AS influenced_opens
    FROM (SELECT app_id, campaign_id FROM campaigns
          UNION
          SELECT app_id, coalesce(campaign_id, message_id) FROM messages) k
    LEFT JOIN campaigns c ON c.app_id = k.app_id AND c.campaign_id = k.campaign_id
    LEFT JOIN message_report r ON r.app_id = k.app_id AND r.campaign_id = k.campaign_id
    GROUP BY k.app_id, k.campaign_id, c.name, c.notice_type, c.notice_type_code,
             c.notice_type_name
) x;

-- One row per app and notice type over all its campaigns (a row with NULLs for the campaigns
-- without one), from campaign_report: aggregates only. For a range of first sends, group
-- campaign_report the same way with a WHERE on first_sent_at (sql/README.md), as
-- GET /api/v1/reports/notice-types does.
CREATE VIEW notice_type_report AS
SELECT app_id,
       notice_type,
       notice_type_code,
       min(notice_type_name) AS notice_type_name,
       count(*) AS campaigns,
       min(first_sent_at) AS first_sent_at,
       sum(sent)::bigint AS sent,
       sum(delivered)::bigint AS delivered,
       sum(opened)::bigint AS opened,
       sum(delivered)::float8 / nullif(sum(sent), 0) AS delivery_rate,
       sum(opened)::float8 / nullif(sum(delivered), 0) AS open_rate,
       sum(opened)::float8 / nullif(sum(sent), 0) AS click_through_rate
FROM campaign_report
GROUP BY app_id, notice_type, notice_type_code;
