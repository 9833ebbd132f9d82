import Testing

@testable import Dashboard

@Suite("HTML")
struct HTMLTests {
    @Test func escapesTheFiveSpecialCharactersAndNothingElse() {
        #expect(
            HTML.escape(#"<script>alert("x") & 'y'</script>"#)
                == "&lt;script&gt;alert(&quot;x&quot;) &amp; &#39;y&#39;&lt;/script&gt;")
        #expect(HTML.escape("día 1 🎉 — 春") == "día 1 🎉 — 春")
        #expect(HTML.escape("") == "")
        #expect(HTML.escape("&amp;") == "&amp;amp;")
    }

    @Test func nulBecomesTheReplacementCharacter() {
        #expect(HTML.escape("a\0b") == "a\u{FFFD}b")
    }

    @Test func interpolatedStringsAreEscapedAndFragmentsAreNot() {
        let name = #"<img src=x onerror="alert(1)">"#
        let inner: HTML = "<b>\(name)</b>"
        let outer: HTML = "<p title=\"\(name)\">\(inner)</p>"
        #expect(
            outer.rendered
                == "<p title=\"&lt;img src=x onerror=&quot;alert(1)&quot;&gt;\"><b>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</b></p>"
        )
        let missing: String? = nil
        let optional: HTML = "[\(missing)][\(Optional("<"))]"
        #expect(optional.rendered == "[][&lt;]")
        let list: HTML = "\([HTML("<i>1</i>"), HTML("<i>2</i>")])"
        #expect(list.rendered == "<i>1</i><i>2</i>")
    }

    @Test func numbersAreWrittenWithAtMostTwoDecimals() {
        #expect(HTML.number(300) == "300")
        #expect(HTML.number(12.5) == "12.5")
        #expect(HTML.number(12.345) == "12.35")
        #expect(HTML.number(0.05) == "0.05")
        #expect(HTML.number(-3.1) == "-3.1")
        #expect(HTML.number(-0.001) == "0")
        #expect(HTML.number(.nan) == "0")
        #expect(HTML.number(.infinity) == "0")
        let point: HTML = "\(1.0 / 3.0),\(7)"
        #expect(point.rendered == "0.33,7")
    }
}
