import Foundation
import PostgresClient

extension Verifier {
    /// Idempotency keys: each stored report that has a key holds it alone, and each key in
    /// `report_keys` is held by a stored report. A key without its report answers the report's
    /// retries as duplicates although nothing was stored (a lost report); a report without its
    /// key is stored again by a retry; two reports under one key count one report twice. Writers
    /// claim the key and append the report in one transaction, and retention and erasure delete
    /// both, so any of these is a fault. `report_keys` holds each key's hash
    /// (``ReportKeyHash``): a key without its report is named by its hash.
    func compareReportKeys(_ summary: inout Summary) throws {
        for row in try connection.query(
            """
            SELECT coalesce(l.app_id, k.app_id) AS app_id,
                   coalesce(l.report_key, k.key_hash::text) AS report_key,
                   coalesce(l.reports, 0) AS reports, k.key_hash IS NOT NULL AS claimed
              FROM (SELECT app_id, report_key, pushtrack_report_key_hash(report_key) AS key_hash,
                           count(*) AS reports FROM events
                     WHERE report_key IS NOT NULL GROUP BY 1, 2) l
              FULL JOIN report_keys k ON k.app_id = l.app_id AND k.key_hash = l.key_hash
             WHERE l.reports IS DISTINCT FROM 1 OR k.key_hash IS NULL
             ORDER BY 1, 2
            """)
        {
            let reports = row.int("reports") ?? 0
            let claimed = row.bool("claimed") == true
            summary.differences.append(
                Difference(
                    table: "report_keys",
                    key: "\(row.string("app_id") ?? "")/\(row.string("report_key") ?? "")",
                    expected: "1 report, its key",
                    stored: "\(reports) \(reports == 1 ? "report" : "reports"), "
                        + (claimed ? "its key" : "no key")))
        }
    }
}
