import Foundation
import PostgresClient

/// Makes the `conversion_devices` rows a batch needs, outside any transaction (see
/// ``IngestBatch/ConversionDevicesNeeded``).
///
/// A writer storing a click or an arrival locks a device's row only when its statement sees the
/// row. So that no such writer misses a row made while it was running, a new row is committed
/// first, and only used once every writer transaction that began before it was made has ended
/// (`pg_stat_activity`: the `pushtrack-writer` sessions holding a transaction id). The waiting is
/// done here, holding no lock, so it cannot deadlock with the writers it waits for. Rows are made
/// only for apps whose `tracking_from` has passed.
enum ConversionDevices {
    /// How long to wait for the writer transactions that may not have seen the rows.
    static let maxWait: Duration = .seconds(30)

    static func prepare(
        _ devices: [IngestBatch.DeviceKey], on connection: PostgresConnection
    ) throws {
        let apps = devices.map(\.appId)
        let ids = devices.map(\.deviceId)
        _ = try connection.query(
            """
            INSERT INTO conversion_devices (app_id, device_id)
            SELECT u.a, u.d FROM unnest(\(apps)::text[], \(ids)::text[]) AS u(a, d)
              JOIN conversion_apps c ON c.app_id = u.a
             WHERE clock_timestamp() >= c.tracking_from
             ORDER BY 1, 2
            ON CONFLICT DO NOTHING
            """)
        _ = try WriterTransactions.awaitEnd(
            of: """
                a.backend_xid IS NOT NULL
                AND a.xact_start <= (
                    SELECT max(d.created_at) FROM conversion_devices d
                      JOIN unnest(\(apps)::text[], \(ids)::text[]) AS u(a, dv)
                        ON d.app_id = u.a AND d.device_id = u.dv)
                """, maxWait: maxWait, on: connection)
    }
}
