-- Legacy push reports (no messageId) whose title matched no registered send, per app, category
-- and UTC day (DESIGN.md section 3: "stored and reported as unattributed"). The raw log keeps
-- each of them with outcome 'unattributed'; `unattributed_reports` counts them as they are
-- written and keeps the counts when retention drops their partitions. A `time` column for
-- Grafana, as in `unattributed_conversion_series`.
CREATE VIEW unattributed_report_series AS
SELECT (day::timestamp AT TIME ZONE 'UTC') AS time, app_id, category, reports
FROM unattributed_reports;
