import Glibc

/// The process's limit on open file descriptors, raised so that the configured number of
/// connections fits.
///
/// Many systems start processes with a soft limit of 1,024 descriptors while allowing far more:
/// a collector configured for 4,096 connections would then refuse the 1,000th. The soft limit is
/// raised towards what the connections need (plus room for database connections and logs), never
/// past the hard limit and never lowered.
enum OpenFileLimit {
    /// Descriptors kept beyond the connections: listening socket, database, logs, pipes.
    static let headroom = 256
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)

    /// Raises the soft limit to fit `connections`; returns the soft limit in force afterwards.
    @discardableResult
    static func raise(toFit connections: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return -1 }
        let wanted = rlim_t(connections + headroom)
        if limit.rlim_cur < wanted && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = min(wanted, limit.rlim_max)
            _ = setrlimit(resource, &limit)
            _ = getrlimit(resource, &limit)
        }
        return limit.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }
}
