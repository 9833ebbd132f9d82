-- 018: a pair (message, device) exists while it holds a report. Until now, a pair whose reports
-- all moved to a closer send registered later (017) was kept with an empty state; erasure finds
-- a device's pairs from the messages its raw events name, so such a row kept the erased device's
-- id. The match now deletes a pair it empties; this deletes those left before. An empty row adds
-- nothing to any count, so no aggregate changes.
DELETE FROM deliveries
 WHERE first_arrival_at IS NULL AND first_click_at IS NULL AND dismissed_at IS NULL
   AND arrival_reports = 0 AND clicks = 0;
