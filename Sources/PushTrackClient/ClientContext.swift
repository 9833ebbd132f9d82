import Foundation

/// The device and app as the request headers describe them, the way the apps in the field send
/// them (DESIGN.md section 2): `Device-Info`, `Version`, `Build`, `Accept-Language`.
///
/// Each queued report keeps the context it was made with, so an upload after an app update
/// still describes the version that saw the push; reports with different contexts go in
/// different requests.
public struct ClientContext: Sendable, Equatable, Hashable {
    /// `Device-Info.device_id`: the same id the reports carry as `deviceId`.
    public var deviceId: String
    /// `Device-Info.platform`, e.g. `ios`.
    public var platform: String?
    /// `Device-Info.os_version`, e.g. `17.5`.
    public var osVersion: String?
    /// `Device-Info.is_notification_enabled`: the notification permission.
    public var notificationsEnabled: Bool?
    /// `Version`: the app's marketing version (`CFBundleShortVersionString`).
    public var appVersion: String?
    /// `Build`: the app's build number (`CFBundleVersion`).
    public var build: String?
    /// `Accept-Language`, e.g. `zh-Hans-CN,en;q=0.8`.
    public var acceptLanguage: String?

    public init(
        deviceId: String, platform: String? = nil, osVersion: String? = nil,
        notificationsEnabled: Bool? = nil, appVersion: String? = nil, build: String? = nil,
        acceptLanguage: String? = nil
    ) {
        self.deviceId = deviceId
        self.platform = platform
        self.osVersion = osVersion
        self.notificationsEnabled = notificationsEnabled
        self.appVersion = appVersion
        self.build = build
        self.acceptLanguage = acceptLanguage
    }

    /// The context of the running app or extension from Foundation alone: the bundle's version
    /// and build, the operating system's version, the preferred languages (best first, with
    /// decreasing quality as the apps send them). The extension and its app share the version
    /// and build (App Store rule), so both describe the same app.
    public static func current(
        deviceId: String, platform: String, notificationsEnabled: Bool? = nil,
        bundle: Bundle = .main
    ) -> ClientContext {
        let version = ProcessInfo.processInfo.operatingSystemVersion
        var osVersion = "\(version.majorVersion).\(version.minorVersion)"
        if version.patchVersion > 0 { osVersion += ".\(version.patchVersion)" }
        return ClientContext(
            deviceId: deviceId, platform: platform, osVersion: osVersion,
            notificationsEnabled: notificationsEnabled,
            appVersion: bundle.object(forInfoDictionaryKey: "CFBundleShortVersionString")
                as? String,
            build: bundle.object(forInfoDictionaryKey: "CFBundleVersion") as? String,
            acceptLanguage: acceptLanguage(Locale.preferredLanguages))
    }

    /// `["zh-Hans-CN", "en"]` → `zh-Hans-CN,en;q=0.9`: the first five tags, quality falling by
    /// a tenth; `nil` for none.
    public static func acceptLanguage(_ tags: [String]) -> String? {
        let parts = tags.prefix(5).enumerated().map { index, tag in
            index == 0 ? tag : "\(tag);q=0.\(10 - index)"
        }
        return parts.isEmpty ? nil : parts.joined(separator: ",")
    }

    /// The `Device-Info` value: a JSON object with the seed apps' snake_case names.
    public var deviceInfoJSON: String {
        var fields: [String: Any] = ["device_id": deviceId]
        if let platform { fields["platform"] = platform }
        if let osVersion { fields["os_version"] = osVersion }
        if let notificationsEnabled { fields["is_notification_enabled"] = notificationsEnabled }
        let data =
            (try? JSONSerialization.data(
                withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// The headers this context contributes to an upload. A value with a control character
    /// (which would split the header) is left out, as the server would ignore it anyway.
    public var headers: [String: String] {
        var headers = ["Device-Info": deviceInfoJSON]
        if let appVersion { headers["Version"] = appVersion }
        if let build { headers["Build"] = build }
        if let acceptLanguage { headers["Accept-Language"] = acceptLanguage }
        return headers.filter { _, value in
            value.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }
        }
    }
}
