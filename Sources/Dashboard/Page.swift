/// The frame of every dashboard page: the document head (viewport, inline stylesheet, no
/// script), the top bar with the sign-out form when signed in, and the content.
///
/// Everything a page needs is in its one HTML response, so the dashboard works offline and
/// under a `Content-Security-Policy` of `default-src 'none'` (``contentSecurityPolicy``).
public struct Page: Sendable {
    public var title: String
    public var content: HTML
    public var signedIn: Bool

    public init(title: String, content: HTML, signedIn: Bool) {
        self.title = title
        self.content = content
        self.signedIn = signedIn
    }

    /// No scripts, no outside resources, inline styles only, forms posting to this origin,
    /// never framed.
    public static let contentSecurityPolicy =
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
        + "frame-ancestors 'none'; base-uri 'none'"

    /// The headers every dashboard page is sent with.
    public static let headers: [(name: String, value: String)] = [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        // Not `no-referrer`: under it a browser sends `Origin: null` with a form post, which the
        // CSRF check (``FormOrigin``) must refuse. `same-origin` still tells other sites nothing.
        ("Referrer-Policy", "same-origin"),
        ("Cache-Control", "no-store"),
    ]

    public func render() -> String {
        let signOut: HTML =
            signedIn
            ? """
            <form method="post" action="/dashboard/sign-out" class="signout">\
            <button type="submit">Sign out</button></form>
            """ : ""
        let page: HTML = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title) · PushTrack</title>
            <style>\(Self.stylesheet)</style></head>
            <body><header class="top"><a href="/dashboard" class="brand">PushTrack</a>\(signOut)</header>
            <main>\(content)</main></body></html>

            """
        return page.rendered
    }

    /// The one stylesheet: a readable column on a laptop, stacked panels and scrolling tables
    /// on a phone (under 760 px).
    static let stylesheet = HTML(
        raw: """
            :root{--ink:#1f2933;--muted:#616e7c;--line:#d9e2ec;--bg:#f5f7fa;--accent:#2563eb}
            *{box-sizing:border-box}
            body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
            a{color:var(--accent)}
            .top{display:flex;align-items:center;justify-content:space-between;padding:.6rem 1rem;background:#102a43}
            .brand{color:#fff;font-weight:700;text-decoration:none;font-size:1.1rem}
            .signout button{background:none;border:1px solid #9fb3c8;color:#fff;border-radius:4px;padding:.25rem .7rem;cursor:pointer}
            main{max-width:1180px;margin:0 auto;padding:1rem}
            h1{font-size:1.45rem;margin:.3rem 0 .2rem;overflow-wrap:anywhere}
            h2{font-size:1.1rem;margin:0 0 .6rem}
            .sub{color:var(--muted);margin:0 0 1rem;overflow-wrap:anywhere}
            .panel{background:#fff;border:1px solid var(--line);border-radius:8px;padding:1rem;margin-bottom:1rem;min-width:0}
            .cols{display:grid;grid-template-columns:1fr 1fr;gap:1rem}
            .cols>.panel{margin-bottom:0}
            .cols{margin-bottom:1rem}
            .three{grid-template-columns:repeat(auto-fit,minmax(420px,1fr))}
            .kpis{display:grid;grid-template-columns:repeat(4,1fr);gap:.6rem;margin-bottom:1rem}
            .kpi{background:#fff;border:1px solid var(--line);border-radius:8px;padding:.6rem .8rem}
            .kpi b{display:block;font-size:1.35rem;font-variant-numeric:tabular-nums}
            .kpi span{color:var(--muted);font-size:.85rem}
            .scroll{overflow-x:auto}
            table{border-collapse:collapse;width:100%;font-size:.9rem}
            th,td{padding:.35rem .5rem;border-bottom:1px solid var(--line);text-align:left;white-space:nowrap}
            th{white-space:normal;vertical-align:bottom}
            th{color:var(--muted);font-weight:600}
            th a{color:inherit;text-decoration:none}
            th a:hover{text-decoration:underline}
            .num{text-align:right;font-variant-numeric:tabular-nums}
            td.name{white-space:normal;min-width:10rem;overflow-wrap:anywhere}
            td.value{min-width:0}
            td.name small,.id{color:var(--muted);display:block}
            form.filters{display:flex;flex-wrap:wrap;gap:.6rem;align-items:flex-end;margin-bottom:1rem}
            form.filters label{display:flex;flex-direction:column;font-size:.8rem;color:var(--muted)}
            input,select,button{font:inherit;padding:.3rem .45rem;border:1px solid #9fb3c8;border-radius:4px;background:#fff;color:var(--ink)}
            form.filters button,.signin button{background:var(--accent);color:#fff;border-color:var(--accent);cursor:pointer}
            .chart{margin:0}
            .for-narrow{display:none}
            .chart svg{width:100%;max-width:860px;height:auto;display:block;margin:0 auto}
            .chart text{font-size:13px;fill:#52606d}
            .chart .grid{stroke:#e4e7eb}
            .chart .axis{stroke:#9aa5b1}
            .chart .track{fill:#f0f4f8}
            .chart .stage{font-weight:600;fill:var(--ink)}
            .chart .note{fill:#7b8794}
            figcaption{font-size:.85rem;color:var(--muted);margin-top:.3rem}
            .key{margin-right:1rem;white-space:nowrap}
            .key i{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;margin-right:.3rem;vertical-align:-1px}
            .error{background:#fde8e8;border:1px solid #f8b4b4;color:#9b1c1c;padding:.6rem .8rem;border-radius:6px}
            .signin{max-width:24rem;margin:3rem auto}
            .signin label{display:block;margin:.8rem 0 .3rem}
            .signin input{width:100%}
            .signin button{margin-top:1rem;width:100%;padding:.5rem}
            .empty{color:var(--muted)}
            .conversion .kpis{margin-bottom:.4rem}
            .conversion .kpis>div b{display:block;font-size:1.2rem;font-variant-numeric:tabular-nums}
            .conversion .kpis>div span{color:var(--muted);font-size:.8rem}
            svg.interval{display:block}
            svg.interval .grid{stroke:#e4e7eb}
            tr.significant td.name{font-weight:600}
            td.significant{color:#15803d;font-weight:600}
            details summary{cursor:pointer;color:var(--muted);font-size:.9rem;margin-top:.5rem}
            @media (max-width:760px){
            main{padding:.6rem}
            .cols{grid-template-columns:1fr}
            .cols>.panel{margin-bottom:0}
            .panel{padding:.7rem}
            .kpis{grid-template-columns:repeat(2,1fr)}
            .wide{display:none}
            h1{font-size:1.25rem}
            .for-wide{display:none}
            .for-narrow{display:block}
            table.stack thead{display:none}
            table.stack tr{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:.1rem .8rem;padding:.5rem 0;border-bottom:1px solid var(--line)}
            table.stack td{border:0;padding:.1rem 0;display:flex;justify-content:space-between;gap:.5rem}
            table.stack td.name{grid-column:1/-1;display:block;font-weight:600}
            table.stack td.wide{display:none}
            table.stack td.interval{grid-column:1/-1}
            table.stack td.interval svg{max-width:70%;height:auto}
            table.stack td[data-label]::before{content:attr(data-label);color:var(--muted);font-size:.8rem}
            }
            """)
}
