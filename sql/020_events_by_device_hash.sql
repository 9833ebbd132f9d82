-- 020: the raw log's index by device is a hash index of device_id (issue 17).
--
-- Every stored report adds an entry to it, and only a device's own reads use it: export and
-- erasure (DESIGN.md section 8), a late send's legacy reports of a pair's device, verify's
-- influence check. Each of them looks a device up by equality (with its app, and sometimes a
-- message, checked on the rows found): a device holds a few reports per message it got. 012's
-- btree of (app_id, device_id, message_id) held all three texts, some 80 bytes an entry; a
-- hash index holds a 4-byte hash, about 2.6 times smaller (2,000,000 rows: 165 against 63 MB),
-- and PostgreSQL spent 2.5 us less per single event on the raw row's insert (12.4 against 9.9,
-- five pairs of `BATCH=1 loadtest/statement_cpu.sh` with the index swapped, loadtest/README.md).
-- The smaller index also stays in the buffers longer as the log grows (README "Cost curve").
-- Hash indexes are WAL-logged and crash-safe since PostgreSQL 10. (Building it reads the whole
-- log once.)
DROP INDEX events_by_device;
CREATE INDEX events_by_device ON events USING hash (device_id);
