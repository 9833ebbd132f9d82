import PostgresClient
import PushTrackCore

/// What `report_keys` stores of a report key (``ValidEvent/reportKey``): the first 16 bytes of
/// the SHA-256 of its UTF-8 bytes, as a uuid. SQL computes the same with
/// `pushtrack_report_key_hash(text)` (sql/019_report_key_hashes.sql), for retention and
/// `verify`; a test holds the two equal. The raw log keeps the key's text.
enum ReportKeyHash {
    static func of(_ reportKey: String) -> PostgresUUID {
        let (high, low) = SHA256.leadingWords(reportKey)
        return PostgresUUID(high: high, low: low)
    }
}
