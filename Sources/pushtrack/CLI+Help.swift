/// The commands' help in one place: the command list of `pushtrack --help` and each command's
/// `--help` are built from the same synopses, so the two cannot disagree.
extension CLI {
    /// One command: its synopsis (what follows `pushtrack ` on a usage line), the sentence the
    /// command list shows, and what its `--help` adds.
    struct Command {
        let synopsis: String
        let summary: String
        var details = ""
    }

    enum Help {
        static let serve = Command(
            synopsis: "serve [--port N] [options]",
            summary: "run the collector and report API (pushtrack serve --help)",
            details: "Each option may also come from its environment variable.")
        static let migrate = Command(
            synopsis: "migrate [--sql-dir DIR]", summary: "apply the database migrations in sql/",
            details: """
                Applies the numbered migrations (NNN_name.sql) not yet applied, each in its own
                transaction, and records them in schema_migrations. Running it again is a no-op; an
                applied migration whose file changed is refused. DIR defaults to PUSHTRACK_SQL_DIR,
                else the sql/ folder of the checkout the binary was built in.
                """)
        static let appCreate = Command(
            synopsis: "app create <name> [--format text|json]",
            summary: "create an app; prints its id and write key once",
            details: """
                Creates an app and its write key (for the X-App-Key header). The key is printed
                once and stored hashed. --format json prints {"appId": …, "name": …, "writeKey": …}.
                """)
        static let tokenCreate = Command(
            synopsis: "token create --role read|admin [--app APP_ID] [--format text|json]",
            summary: "create an API token; prints it once",
            details: """
                Creates a bearer token for the report API (read) or the report and admin API
                (admin), limited to one app with --app, else valid for every app. Printed once,
                stored hashed. --format json prints {"token": …, "role": …, "appId": …}.
                """)
        static let tokenRevoke = Command(
            synopsis: "token revoke <token-or-write-key>",
            summary: "revoke a token or a write key",
            details:
                "Revokes it; servers stop accepting it within their cache time (5 s by default).")
        static let verify = Command(
            synopsis: "verify [--max-differences N]",
            summary: "recompute the aggregates from the raw log; exit 1 on any difference",
            details: """
                Recomputes the delivery state of every (message, device) pair, each raw report's
                dedup outcome and every rollup from the raw event log, in one consistent snapshot,
                and prints each stored value that differs, each pair row no report holds, and each
                idempotency key not held by exactly one stored report. Messages some of whose raw
                events retention dropped (`pushtrack maintain`) are not checked: their numbers no
                longer follow from the raw log that remains.
                Exit status 0 when everything matches, 1 when something differs.
                """)
        static let maintain = Command(
            synopsis: "maintain [--retention-days N] [--dry-run] [--lock-timeout-ms N]",
            summary: "create partitions, drop raw events past the retention, age out old state",
            details: """
                Creates the raw-event partitions from yesterday to a week ahead, drops the daily
                partitions of raw events received more than N days ago (whole UTC days; default
                PUSHTRACK_RETENTION_DAYS, else 90), and deletes the per-pair delivery state of the
                messages whose raw events were dropped and none of whose pairs changed since. The
                campaign and message reports keep their numbers. A partition is detached under a
                short lock timeout (default 2000 ms, 3 attempts) so that ingestion never waits
                long; one it cannot lock is left for the next run. --dry-run prints what would be
                done and changes nothing. `pushtrack serve` runs the same every
                --maintenance-interval seconds.

                Exit 0 when everything due was done, 1 when something was left for a later run
                (or another process was maintaining), 2 for a bad argument.
                """)
        static let reportCampaigns = Command(
            synopsis:
                "report campaigns [--from T] [--to T] [--app APP] [--tz ZONE] [--format table|csv|json]",
            summary:
                "one line per campaign, latest first send first; --from/--to select by first send")
        static let reportCampaign = Command(
            synopsis:
                "report campaign <id> [--app APP] [--from T] [--to T] [--tz ZONE] [--format table|csv|json]",
            summary:
                "a campaign's report fields, its messages, breakdowns by platform, app version and "
                + "locale, and the cumulative open curve; --from/--to select its messages by first "
                + "send")
        static let reportVariants = Command(
            synopsis:
                "report variants <id> [--metric openRate|clickThroughRate|deliveryRate|conversionRate] [--conversion CATEGORY] [--control MESSAGE] [--app APP] [--format table|csv|json]",
            summary:
                "the campaign's messages compared on one metric (default openRate) against the "
                + "control (default: the message first sent): Wilson intervals, lift, z-test with "
                + "Holm's correction, chi-squared; conversionRate needs --conversion")
        static let reportTimeseries = Command(
            synopsis:
                "report timeseries <id> [--bucket hour|day] [--tz ZONE] [--from T] [--to T] [--app APP] [--format table|csv|json]",
            summary: "a campaign's counters per hour or day in ZONE (default UTC)")
        static let reportAudience = Command(
            synopsis:
                "report audience [--campaign ID] [--app APP] [--environment sandbox|production] [--from T] [--to T] [--format table|csv|json]",
            summary:
                "the funnel registered devices → permission on → sent → delivered → opened (and "
                + "influenced opens) of the app or of one campaign, and the permission rate per UTC "
                + "day (--from/--to select the days)")
        static let reportNoticeTypes = Command(
            synopsis:
                "report notice-types [--from T] [--to T] [--app APP] [--tz ZONE] [--format table|csv|json]",
            summary:
                "one line per notice type (as given: the code 10 and the string \"10\" are two "
                + "types; campaigns without one last) over the campaigns first sent in "
                + "--from/--to: campaigns, sent, delivered, opened and the rates")
        static let reportHealth = Command(
            synopsis: "report health [--app APP] [--days N] [--format table|csv|json]",
            summary:
                "deliveries per UTC day, platform and app version with the shares confirmed and "
                + "reported by the Notification Service Extension, and the alerts of a version far "
                + "below the others (the last N days, default 14, 1 to 90)")
        static let devicesExport = Command(
            synopsis: "devices export <deviceId> [--app APP]",
            summary:
                "print everything stored about a device as JSON (its events, deliveries, tokens)")
        static let devicesErase = Command(
            synopsis: "devices erase <deviceId> [--app APP] [--format text|json]",
            summary: "erase a device's events, delivery state, idempotency keys and tokens")
        static let devicesPrune = Command(
            synopsis: "devices prune [--days N] [--app APP]",
            summary: "delete push tokens not seen for N days (default 180)",
            details: """
                Deletes the push tokens (uploaded with POST /setting/…) not seen for N days (default 180,
                at least 1), of APP or of every app, and prints how many. The audience totals follow; the
                daily permission series keeps its history.
                """)

        static let report = [
            reportCampaigns, reportCampaign, reportVariants, reportTimeseries, reportAudience,
            reportNoticeTypes, reportHealth,
        ]
        static let devices = [devicesPrune, devicesExport, devicesErase]
        static let token = [tokenCreate, tokenRevoke]
        /// Every command, in the order the list shows them.
        static let all =
            [serve, migrate, appCreate] + token + [verify, maintain] + report + devices

        /// What `pushtrack devices --help` says after the forms.
        static let devicesDetails = """
            prune deletes the push tokens (uploaded with POST /setting/…) not seen for N days
            (default 180, at least 1), of APP or of every app, and prints how many; the audience
            totals follow, the daily permission series keeps its history.

            export prints the body of GET /api/v1/devices/{deviceId}/export: the device's raw
            events, its delivery state per message and the push tokens its uploads named.

            erase deletes them (DELETE /api/v1/devices/{deviceId}), with the device's idempotency
            keys, in one transaction, and prints how many events, deliveries and tokens went; the
            reports keep their numbers and `pushtrack verify` stays clean. A second erase erases
            0. --app names the app when the database holds several.
            """

        /// What `pushtrack report --help` says after each report's sentence.
        static let reportDetails = """
            T is an RFC 3339 date-time (2026-11-29T08:00:00Z) or a date (2026-11-29, a whole day in
            ZONE). --app names the app when a campaign id exists in several. Rates are shown as
            percentages in tables and as fractions in CSV and JSON; '-' (empty in CSV) where the
            denominator is 0. --format json prints the body of the matching GET /api/v1/reports/… request.
            """
    }

    /// `pushtrack --help`: every command's synopsis and sentence.
    static var usage: String {
        var text = "usage: pushtrack <command> [options]\n\ncommands:\n"
        for command in Help.all {
            text += "  " + command.synopsis
            if command.synopsis.count < 40 {
                text += String(repeating: " ", count: 40 - command.synopsis.count)
            } else {
                text += "\n" + String(repeating: " ", count: 42)
            }
            text += wrapped(command.summary, width: 80, indent: 42) + "\n"
        }
        return text
            + "\nThe database is DATABASE_URL (a libpq URI). `pushtrack <command> --help` describes a command."
    }

    /// A command's `--help`: `usage: pushtrack <synopsis>`, then its details.
    static func help(_ command: Command) -> String {
        help([command], details: command.details)
    }

    /// The usage lines of several forms (`pushtrack token`, `pushtrack report`), then `details`.
    static func help(_ commands: [Command], details: String = "") -> String {
        let forms = commands.enumerated().map { index, command in
            (index == 0 ? "usage: pushtrack " : "       pushtrack ") + command.synopsis
        }
        return forms.joined(separator: "\n") + (details.isEmpty ? "" : "\n\n" + details)
    }

    /// `pushtrack report --help`: the reports' forms, each one's sentence, the shared rules.
    static var reportUsage: String {
        let sentences = Help.report.map { command in
            let name = String(command.synopsis.split(separator: " ")[1])
            return name.padding(toLength: 13, withPad: " ", startingAt: 0)
                + wrapped(command.summary, width: 82, indent: 13)
        }
        return help(
            Help.report, details: sentences.joined(separator: "\n") + "\n\n" + Help.reportDetails)
    }

    /// `text` in lines of at most `width` characters, the lines after the first indented by
    /// `indent` spaces.
    static func wrapped(_ text: String, width: Int, indent: Int) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines.joined(separator: "\n" + String(repeating: " ", count: indent))
    }
}
