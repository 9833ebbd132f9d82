/// A composite type of the database (`CREATE TYPE name AS (…)`): the OIDs that rows of it bound
/// in binary carry (``PostgresCopyRows``'s `.records`). PostgreSQL gives a type its OIDs when
/// it creates it, so they are looked up, once per session (``PostgresConnection/compositeTypes(named:)``).
public struct PostgresCompositeType: Sendable, Hashable {
    /// The type's OID, written in the array's header.
    public let oid: UInt32
    /// Its array type's OID, the type the parameter is declared with.
    public let arrayOID: UInt32

    public init(oid: UInt32, arrayOID: UInt32) {
        self.oid = oid
        self.arrayOID = arrayOID
    }
}

extension PostgresConnection {
    /// The composite type `name` (as the session's `search_path` finds it), looked up the first
    /// time this session needs it (one statement, unless ``compositeTypes(named:)`` looked it up
    /// before). Throws when there is no composite type of that name.
    public func compositeType(named name: String) throws(PostgresError) -> PostgresCompositeType {
        if let known = knownCompositeTypes[name] { return known }
        try compositeTypes(named: [name])
        return knownCompositeTypes[name]!
    }

    /// Looks up those of the composite types `names` that this session has not yet, in one
    /// statement (none when it knows them all), so that ``compositeType(named:)`` finds them
    /// without one of its own: a session that will bind rows of them calls this when it
    /// connects. Throws, naming the first, when one is not a composite type.
    public func compositeTypes(named names: [String]) throws(PostgresError) {
        let names = names.filter { knownCompositeTypes[$0] == nil }
        guard !names.isEmpty else { return }
        let rows = try query(
            """
            SELECT t.name, p.oid::int8, p.typarray::int8
              FROM unnest(\(names)::text[]) WITH ORDINALITY AS t(name, position)
              LEFT JOIN pg_type p ON p.oid = to_regtype(t.name) AND p.typtype = 'c'
             ORDER BY t.position
            """)
        for row in rows {
            let name = row.string(0) ?? ""
            guard let oid = row.int(1), let arrayOID = row.int(2) else {
                throw PostgresError(
                    kind: .query, sqlState: .undefinedObject,
                    message: "there is no composite type \(name)",
                    hint: "are the database's migrations applied?")
            }
            knownCompositeTypes[name] = PostgresCompositeType(
                oid: UInt32(oid), arrayOID: UInt32(arrayOID))
        }
    }
}
