extension Duration {
    /// The duration in seconds, as `Double` (what `DispatchTime`, `Thread.sleep` and metrics
    /// take).
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
