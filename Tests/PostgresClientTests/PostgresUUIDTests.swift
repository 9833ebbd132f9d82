import PushTrackTesting
import Testing

@testable import PostgresClient

@Suite struct PostgresUUIDTests {
    @Test func theTextFormParsesWithOrWithoutHyphensInEitherCase() {
        let canonical = "147bd9fd-11fc-55d5-540a-f69cbc4860c3"
        let uuid = PostgresUUID(canonical)
        #expect(uuid?.high == 0x147b_d9fd_11fc_55d5)
        #expect(uuid?.low == 0x540a_f69c_bc48_60c3)
        #expect(uuid?.description == canonical)
        #expect(PostgresUUID("147BD9FD11FC55D5540AF69CBC4860C3") == uuid)
        #expect(PostgresUUID(high: 0x147b_d9fd_11fc_55d5, low: 0x540a_f69c_bc48_60c3) == uuid)
        #expect(
            PostgresUUID(high: 0, low: 0).description == "00000000-0000-0000-0000-000000000000")
    }

    @Test(arguments: [
        "", "147bd9fd-11fc-55d5-540a-f69cbc4860c", "147bd9fd-11fc-55d5-540a-f69cbc4860c3a",
        "147bd9fd-11fc-55d5-540a-f69cbc4860cg", "{147bd9fd-11fc-55d5-540a-f69cbc4860c3}",
        "147bd9fd 11fc 55d5 540a f69cbc4860c3",
    ])
    func anythingButThirtyTwoHexDigitsIsRefused(text: String) {
        #expect(PostgresUUID(text) == nil)
    }

    @Test func theOrderIsPostgreSQLsByteOrder() {
        let low = PostgresUUID("7fffffff-ffff-ffff-ffff-ffffffffffff")!
        let high = PostgresUUID("80000000-0000-0000-0000-000000000000")!
        let higher = PostgresUUID("80000000-0000-0000-0000-000000000001")!
        #expect([higher, high, low].sorted() == [low, high, higher])
    }

    @Test func anArrayBindsInBinaryAndComesBackAsTheSameUUIDsInOrder() throws {
        let connection = try connect()
        let uuids = [
            PostgresUUID("ffffffff-0000-0000-0000-000000000001")!,
            PostgresUUID("00000000-0000-0000-0000-000000000000")!,
            PostgresUUID("80000000-ffff-0000-abcd-ef0123456789")!,
        ]
        let rows = try connection.query(
            "SELECT u::text AS u FROM unnest(\(uuids)::uuid[]) WITH ORDINALITY AS t(u, n) ORDER BY u")
        #expect(rows.map { $0.string("u") ?? "" } == uuids.sorted().map(\.description))
        #expect(rows.compactMap { $0.string("u").flatMap(PostgresUUID.init) } == uuids.sorted())
    }
}
