import Synchronization

/// A fixed number of integer counters in one block of memory, updated with relaxed atomic adds.
///
/// Metrics on the request path use these: no allocation and no lock per update, and a scrape
/// reads each counter with one atomic load (a scrape may see one counter of a request updated
/// and another not yet, which Prometheus tolerates).
///
/// `@unchecked Sendable`: the memory is allocated and initialized once in `init`, freed in
/// `deinit`, and in between only ever accessed through the atomics it holds.
public final class AtomicCounters: @unchecked Sendable {
    /// How many counters there are; valid indexes are `0..<count`.
    public let count: Int
    private let base: UnsafeMutablePointer<Atomic<Int>>

    /// Creates `count` counters, all zero.
    public init(count: Int) {
        precondition(count >= 0)
        self.count = count
        base = .allocate(capacity: max(count, 1))
        for index in 0..<count { (base + index).initialize(to: Atomic(0)) }
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    /// Adds `amount` to counter `index` (wrapping on overflow, which no real count reaches).
    @inline(__always)
    public func add(_ index: Int, _ amount: Int = 1) {
        precondition(index >= 0 && index < count, "counter index out of range")
        base[index].wrappingAdd(amount, ordering: .relaxed)
    }

    /// Sets counter `index` (for gauges).
    public func store(_ index: Int, _ value: Int) {
        precondition(index >= 0 && index < count, "counter index out of range")
        base[index].store(value, ordering: .relaxed)
    }

    /// The current value of counter `index`.
    public func load(_ index: Int) -> Int {
        precondition(index >= 0 && index < count, "counter index out of range")
        return base[index].load(ordering: .relaxed)
    }
}
