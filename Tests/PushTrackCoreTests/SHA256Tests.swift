import Testing

@testable import PushTrackCore

@Suite struct SHA256Tests {
    @Test func fipsVectors() {
        #expect(
            SHA256.hexDigest("")
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            SHA256.hexDigest("abc")
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.hexDigest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            SHA256.hexDigest(
                "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
            ) == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    @Test func oneMillionA() {
        #expect(
            SHA256.hexDigest([UInt8](repeating: 0x61, count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Secrets are stored as these digests: the hashes the hand-written SHA-256 stored before
    /// libcrypto took over must come out the same, or every key and token would stop working.
    @Test func storedSecretHashesStayTheSame() {
        let stored: [(String, String)] = [
            (
                "wk_3f9c0d1e2a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9012345678ab",
                "d753ca32af81af1b12ef875c1e07febd6b612cfaab1027e6ddca051efb24f9e2"
            ),
            (
                "pt_00000000000000000000000000000000000000000000000000000000000000ff",
                "29e7feba8a8299ec53aca9c53544403ca8bb9eecef62b5c8217795a0354efa8a"
            ),
            (
                "ps_9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9",
                "e81bb4170913c958748db210e17c679eaf884bd43313c2102e41255387260ed0"
            ),
            ("ünïcødé 日本語 🚀", "6a43eae73cd5253170792cf51cf9945b85ab1965ff7c7299d478407f50732c56"),
        ]
        for (secret, digest) in stored {
            #expect(Hex.encode(Secret.hash(secret)) == digest, "\(secret)")
        }
        let allBytes = (0..<4).flatMap { _ in (0...255).map { UInt8($0) } }
        #expect(
            SHA256.hexDigest(allBytes)
                == "785b0751fc2c53dc14a4ce3d800e69ef9ce1009eb327ccf458afe09c242c26c9")
    }

    @Test func paddingBoundaries() {
        // 55 bytes fit the length in one block; 64 bytes need a second one.
        #expect(
            SHA256.hexDigest(String(repeating: "a", count: 55))
                == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318")
        #expect(
            SHA256.hexDigest(String(repeating: "a", count: 64))
                == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb")
    }

    @Test func digestIs32Bytes() {
        #expect(SHA256.hash("abc").count == 32)
        #expect(SHA256.hash("abc") == SHA256.hash(Array("abc".utf8)))
    }

    @Test func hexRoundTrip() {
        #expect(Hex.encode([0x00, 0x0f, 0xa0, 0xff]) == "000fa0ff")
        #expect(Hex.decode("000FA0ff") == [0x00, 0x0f, 0xa0, 0xff])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.decode("") == [])
    }
}

@Suite struct SecretTests {
    @Test func generateHasPrefixAnd64HexDigits() {
        let secret = Secret.generate(prefix: "pt_live_")
        #expect(secret.hasPrefix("pt_live_"))
        let random = secret.dropFirst("pt_live_".count)
        #expect(random.count == 64)
        #expect(random.allSatisfy { "0123456789abcdef".contains($0) })
    }

    @Test func generatedSecretsDiffer() {
        let secrets = Set((0..<100).map { _ in Secret.generate(prefix: "k_") })
        #expect(secrets.count == 100)
    }

    @Test func hashIsSHA256OfTheText() {
        #expect(
            Secret.hash("abc")
                == Hex.decode("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }

    @Test func constantTimeEquals() {
        let digest = Secret.hash("pt_live_x")
        #expect(Secret.constantTimeEquals(digest, Secret.hash("pt_live_x")))
        #expect(!Secret.constantTimeEquals(digest, Secret.hash("pt_live_y")))
        var lastBitFlipped = digest
        lastBitFlipped[31] ^= 1
        #expect(!Secret.constantTimeEquals(digest, lastBitFlipped))
        #expect(!Secret.constantTimeEquals(digest, Array(digest.prefix(31))))
        #expect(Secret.constantTimeEquals([], []))
    }
}
