/// The sign-in form: a read or admin API token, posted (never put in a URL).
public enum SignInPage {
    public static func render(error: String? = nil) -> String {
        let alert: HTML = error.map { "<p class=\"error\" role=\"alert\">\($0)</p>" } ?? ""
        return Page(
            title: "Sign in",
            content: """
                <form method="post" action="/dashboard/sign-in" class="signin panel">\
                <h1>Sign in</h1>\
                <p class="sub">Use an API token with the read or admin role \
                (<code>pushtrack token create --role read</code>).</p>\(alert)\
                <label for="token">API token</label>\
                <input id="token" name="token" type="password" autocomplete="current-password" \
                required autofocus spellcheck="false">\
                <button type="submit">Sign in</button></form>
                """,
            signedIn: false
        ).render()
    }
}
