import Foundation

/// The statistics behind the variants report (DESIGN.md section 4c): binomial proportions, the
/// Wilson score interval, the pooled two-proportion z-test, Holm's step-down correction and
/// Pearson's chi-squared test of independence with its p-value.
///
/// Written here once, with no outside library: the p-values come from `erfc` (the normal
/// distribution) and from the regularized upper incomplete gamma function (the chi-squared
/// distribution), both accurate to about 1e-13 over the ranges reports use.
public enum Statistics {
    /// The two-sided 95% quantile of the standard normal distribution that DESIGN.md fixes.
    public static let z95 = 1.959964

    /// The Wilson score interval of `successes` out of `trials` at `z` (95% by default), or `nil`
    /// when there are no trials or `successes` is outside `0...trials`.
    ///
    /// Unlike the normal ("Wald") interval it stays inside [0, 1] and is not empty at 0/n or
    /// n/n: 0/10 gives [0, 0.2775], 10/10 gives [0.7225, 1].
    public static func wilsonInterval(successes: Int, trials: Int, z: Double = z95) -> (
        low: Double, high: Double
    )? {
        guard trials > 0, (0...trials).contains(successes) else { return nil }
        let n = Double(trials)
        let p = Double(successes) / n
        let z2 = z * z
        let denominator = 1 + z2 / n
        let center = (p + z2 / (2 * n)) / denominator
        let half = z / denominator * (p * (1 - p) / n + z2 / (4 * n * n)).squareRoot()
        // At 0/n and n/n the bound equals the centre's distance from the edge exactly; the
        // subtraction may leave a rounding error of either sign, which the clamp removes.
        let low = successes == 0 ? 0 : max(0, center - half)
        let high = successes == trials ? 1 : min(1, center + half)
        return (low, high)
    }

    /// The pooled two-proportion z-test of `a` against `b` (`a` minus `b` in the numerator):
    /// the z score and its two-sided p-value, or `nil` when either side has no trials, a side's
    /// successes are outside its trials, or the pooled proportion is 0 or 1 (no variance: the
    /// two rates are equal and the statistic is undefined).
    public static func twoProportionZTest(
        successesA: Int, trialsA: Int, successesB: Int, trialsB: Int
    ) -> (z: Double, pValue: Double)? {
        guard trialsA > 0, trialsB > 0, (0...trialsA).contains(successesA),
            (0...trialsB).contains(successesB)
        else { return nil }
        let na = Double(trialsA)
        let nb = Double(trialsB)
        let pooled = Double(successesA + successesB) / (na + nb)
        let variance = pooled * (1 - pooled) * (1 / na + 1 / nb)
        guard variance > 0 else { return nil }
        let z = (Double(successesA) / na - Double(successesB) / nb) / variance.squareRoot()
        return (z, twoSidedNormalPValue(z))
    }

    /// `P(|Z| ≥ |z|)` for a standard normal `Z`, computed as `erfc(|z| / √2)`, which keeps its
    /// relative precision far into the tail (where `1 − Φ` would round to 0).
    public static func twoSidedNormalPValue(_ z: Double) -> Double {
        erfc(abs(z) / 2.0.squareRoot())
    }

    /// Holm's step-down adjusted p-values, in the order given; `nil` entries are not tests and
    /// do not count in the family.
    ///
    /// The i-th smallest of the m p-values is multiplied by `m − i + 1`, the results are made
    /// non-decreasing in that order and capped at 1: an adjusted p-value below α is exactly a
    /// hypothesis Holm's procedure rejects at level α.
    public static func holmAdjusted(_ pValues: [Double?]) -> [Double?] {
        let tested = pValues.indices.filter { pValues[$0] != nil }
            .sorted { (pValues[$0]!, $0) < (pValues[$1]!, $1) }
        var adjusted = [Double?](repeating: nil, count: pValues.count)
        var running = 0.0
        for (rank, index) in tested.enumerated() {
            let scaled = min(1, Double(tested.count - rank) * pValues[index]!)
            running = max(running, scaled)
            adjusted[index] = running
        }
        return adjusted
    }

    /// Pearson's chi-squared test of independence of a table of counts (rows × columns): the
    /// statistic, its degrees of freedom `(rows − 1)(columns − 1)` and p-value; `nil` when the
    /// table is smaller than 2 × 2, has a negative count, or a row or column that sums to 0
    /// (an expected count of 0: the statistic is undefined).
    public static func chiSquareIndependence(_ table: [[Int]]) -> (
        statistic: Double, degreesOfFreedom: Int, pValue: Double
    )? {
        let rows = table.count
        guard rows >= 2, let columns = table.first?.count, columns >= 2,
            table.allSatisfy({ $0.count == columns && $0.allSatisfy { $0 >= 0 } })
        else { return nil }
        let rowTotals = table.map { Double($0.reduce(0, +)) }
        let columnTotals = (0..<columns).map { column in
            Double(table.reduce(0) { $0 + $1[column] })
        }
        guard rowTotals.allSatisfy({ $0 > 0 }), columnTotals.allSatisfy({ $0 > 0 }) else {
            return nil
        }
        let total = rowTotals.reduce(0, +)
        var statistic = 0.0
        for row in 0..<rows {
            for column in 0..<columns {
                let expected = rowTotals[row] * columnTotals[column] / total
                let difference = Double(table[row][column]) - expected
                statistic += difference * difference / expected
            }
        }
        let degrees = (rows - 1) * (columns - 1)
        return (statistic, degrees, chiSquareSurvival(statistic, degreesOfFreedom: degrees))
    }

    /// `P(X ≥ x)` for X chi-squared with `k` degrees of freedom: `Q(k/2, x/2)`.
    public static func chiSquareSurvival(_ x: Double, degreesOfFreedom k: Int) -> Double {
        guard x > 0 else { return 1 }
        return regularizedUpperGamma(Double(k) / 2, x / 2)
    }

    /// The regularized upper incomplete gamma function `Q(a, x) = Γ(a, x) / Γ(a)` for a > 0,
    /// x ≥ 0: the power series of `P = 1 − Q` below `x < a + 1`, where it converges fast, and
    /// the continued fraction for `Q` (modified Lentz) above, where the series would lose
    /// precision; each stops at a relative change under 1e-15.
    public static func regularizedUpperGamma(_ a: Double, _ x: Double) -> Double {
        precondition(a > 0 && x >= 0, "Q(a, x) needs a > 0 and x >= 0")
        if x == 0 { return 1 }
        // x^a e^-x / Γ(a), the factor both expansions share, taken through logarithms.
        let prefactor = exp(a * log(x) - x - lgamma(a))
        if x < a + 1 {
            var term = 1 / a
            var sum = term
            var n = a
            for _ in 0..<10_000 {
                n += 1
                term *= x / n
                sum += term
                if abs(term) < abs(sum) * 1e-15 { break }
            }
            return max(0, 1 - sum * prefactor)
        }
        let tiny = 1e-300
        var b = x + 1 - a
        var c = 1 / tiny
        var d = 1 / b
        var fraction = d
        for i in 1...10_000 {
            let an = -Double(i) * (Double(i) - a)
            b += 2
            d = an * d + b
            if abs(d) < tiny { d = tiny }
            c = b + an / c
            if abs(c) < tiny { c = tiny }
            d = 1 / d
            let step = d * c
            fraction *= step
            if abs(step - 1) < 1e-15 { break }
        }
        return min(1, fraction * prefactor)
    }
}
