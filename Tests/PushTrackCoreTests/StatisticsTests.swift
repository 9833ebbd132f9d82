import Foundation
import Testing

@testable import PushTrackCore

/// Reference values were computed independently with SciPy 1.17 (`scipy.stats.chi2.sf`,
/// `chi2_contingency(correction=False)`, `norm.sf`) and, for the chi-squared quantiles, agree
/// with the published tables (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.4).
@Suite("Statistics")
struct StatisticsTests {
    /// Relative closeness, for values that span many orders of magnitude.
    private func close(_ a: Double?, _ b: Double, relative: Double = 1e-9) -> Bool {
        guard let a else { return false }
        return abs(a - b) <= relative * max(abs(b), 1e-300)
    }

    @Test(arguments: [
        (3.841459, 1, 0.04999999465319563),
        (6.634897, 1, 0.009999997760282476),
        (11.0705, 5, 0.0499999554280436),
        (23.2093, 10, 0.009999831639612145),
        (0.5, 3, 0.9188914116546758),
        (100, 50, 3.454931382984871e-05),
        (0.001, 1, 0.9747728793699604),
        (300, 4, 1.083439491947837e-63),
    ])
    func chiSquareSurvivalMatchesTheTables(x: Double, degrees: Int, expected: Double) {
        #expect(close(Statistics.chiSquareSurvival(x, degreesOfFreedom: degrees), expected))
    }

    @Test func chiSquareOfZeroIsOne() {
        #expect(Statistics.chiSquareSurvival(0, degreesOfFreedom: 3) == 1)
        #expect(Statistics.regularizedUpperGamma(2.5, 0) == 1)
    }

    @Test func twoByThreeTableWithStatisticSixHasPExpMinusThree() throws {
        // Expected counts are all 14; the deviations (1, 4, -5) give 2 * 42 / 14 = 6.
        let test = try #require(Statistics.chiSquareIndependence([[15, 18, 9], [13, 10, 19]]))
        #expect(close(test.statistic, 6.0, relative: 1e-12))
        #expect(test.degreesOfFreedom == 2)
        #expect(close(test.pValue, exp(-3.0), relative: 1e-12))
        #expect(close(test.pValue, 0.04978706836786395))
    }

    @Test func chiSquareOfOpenCounts() throws {
        let test = try #require(
            Statistics.chiSquareIndependence([[120, 150, 131], [880, 850, 869]]))
        #expect(close(test.statistic, 3.978127017968738))
        #expect(test.degreesOfFreedom == 2)
        #expect(close(test.pValue, 0.13682349944404568))
    }

    @Test(arguments: [
        [[0, 0, 0], [5, 6, 7]],  // a row of zeros: no successes anywhere
        [[1, 0], [2, 0]],  // a column of zeros: a variant without trials
        [[1, 2]],  // one row
        [[1], [2]],  // one column
        [[1, -2], [3, 4]],  // a negative count
        [[1, 2], [3]],  // ragged
    ])
    func chiSquareIsUndefinedWithoutExpectedCounts(table: [[Int]]) {
        #expect(Statistics.chiSquareIndependence(table) == nil)
    }

    @Test func wilsonIntervalMatchesIndependentValues() throws {
        let half = try #require(Statistics.wilsonInterval(successes: 5, trials: 10))
        #expect(close(half.low, 0.2365930890114794))
        #expect(close(half.high, 0.7634069109885206))
        // Newcombe (1998), example of 81/263: 0.2553 to 0.3662.
        let newcombe = try #require(Statistics.wilsonInterval(successes: 81, trials: 263))
        #expect(close(newcombe.low, 0.25528851948901576))
        #expect(close(newcombe.high, 0.3662095774580194))
    }

    @Test func wilsonIntervalAtTheEdgesReachesZeroAndOneExactly() throws {
        let none = try #require(Statistics.wilsonInterval(successes: 0, trials: 10))
        #expect(none.low == 0)
        #expect(close(none.high, 0.2775328030260577))
        let all = try #require(Statistics.wilsonInterval(successes: 10, trials: 10))
        #expect(close(all.low, 0.7224671969739421))
        #expect(all.high == 1)
        let one = try #require(Statistics.wilsonInterval(successes: 1, trials: 1))
        #expect(close(one.low, 0.2065493117918027))
        #expect(one.high == 1)
    }

    @Test func wilsonIntervalNeedsTrialsAndABinomialCount() {
        #expect(Statistics.wilsonInterval(successes: 0, trials: 0) == nil)
        #expect(Statistics.wilsonInterval(successes: 11, trials: 10) == nil)
        #expect(Statistics.wilsonInterval(successes: -1, trials: 10) == nil)
    }

    @Test func pooledTwoProportionZTest() throws {
        let up = try #require(
            Statistics.twoProportionZTest(
                successesA: 150, trialsA: 1000, successesB: 120, trialsB: 1000))
        #expect(close(up.z, 1.963049807622355))
        #expect(close(up.pValue, 0.04964038686536878))
        let down = try #require(
            Statistics.twoProportionZTest(
                successesA: 30, trialsA: 200, successesB: 45, trialsB: 210))
        #expect(close(down.z, -1.6829763461389204))
        #expect(close(down.pValue, 0.09237967055994593))
    }

    @Test func zTestIsUndefinedWithoutTrialsOrVariance() {
        #expect(
            Statistics.twoProportionZTest(successesA: 0, trialsA: 0, successesB: 1, trialsB: 2)
                == nil)
        #expect(
            Statistics.twoProportionZTest(successesA: 0, trialsA: 5, successesB: 0, trialsB: 9)
                == nil)
        #expect(
            Statistics.twoProportionZTest(successesA: 5, trialsA: 5, successesB: 9, trialsB: 9)
                == nil)
        #expect(
            Statistics.twoProportionZTest(successesA: 6, trialsA: 5, successesB: 1, trialsB: 9)
                == nil)
    }

    @Test func normalTailKeepsItsPrecision() {
        #expect(close(Statistics.twoSidedNormalPValue(1.959964), 0.049999998192884795))
        #expect(close(Statistics.twoSidedNormalPValue(-8), 1.244192114854348e-15, relative: 1e-6))
        #expect(Statistics.twoSidedNormalPValue(0) == 1)
    }

    @Test func holmMultipliesByRankAndKeepsTheOrder() {
        let adjusted = Statistics.holmAdjusted([0.01, 0.04, nil, 0.03])
        #expect(adjusted.count == 4)
        #expect(close(adjusted[0], 0.03, relative: 1e-12))
        #expect(close(adjusted[1], 0.06, relative: 1e-12))
        #expect(adjusted[2] == nil)
        #expect(close(adjusted[3], 0.06, relative: 1e-12))
    }

    @Test func holmCapsAtOneAndIgnoresAnEmptyFamily() {
        #expect(Statistics.holmAdjusted([0.6, 0.7]) == [1, 1])
        #expect(Statistics.holmAdjusted([nil, nil]) == [nil, nil])
        #expect(Statistics.holmAdjusted([0.2]) == [0.2])
    }
}
