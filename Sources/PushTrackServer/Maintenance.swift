import PostgresClient

/// Periodic upkeep of the schema that does not depend on traffic.
public enum Maintenance {
    /// Days of raw-event partitions kept ready ahead of today (UTC).
    public static let partitionDaysAhead = 7

    /// Creates the daily partitions of the raw event log from yesterday to a week ahead.
    /// - Returns: how many partitions were created.
    @discardableResult
    public static func ensurePartitions(_ connection: PostgresConnection) throws -> Int {
        let rows = try connection.query(
            "SELECT pushtrack_ensure_partitions((now() AT TIME ZONE 'UTC')::date - 1, $1) AS created",
            [partitionDaysAhead + 2])
        return rows.first?.int("created") ?? 0
    }
}
