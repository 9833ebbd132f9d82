/// How a ``PostgresConnection`` uses its session: what it calls itself, and whether it may keep
/// named prepared statements on the server.
///
/// Behind a transaction pooler (PgBouncer with `pool_mode = transaction`) consecutive
/// transactions of one client run on different server connections, so nothing may outlive a
/// transaction: no named prepared statements (PgBouncer 1.18, Debian 12's, cannot track them;
/// `max_prepared_statements` came in 1.21), no `SET` outside `SET LOCAL`, no session advisory
/// locks. The application name is a startup parameter, which poolers pass on.
public struct PostgresSessionOptions: Sendable, Equatable {
    /// `application_name` unless the URL sets one (libpq's `fallback_application_name`).
    public var applicationName: String
    /// Whether ``PostgresConnection/queryPrepared(_:)`` prepares named statements; when false it
    /// runs each statement unnamed (the extended protocol's one-shot Parse/Bind/Execute), which
    /// any pooler passes through.
    public var namedStatements: Bool

    public init(applicationName: String = "pushtrack", namedStatements: Bool = true) {
        self.applicationName = applicationName
        self.namedStatements = namedStatements
    }
}
