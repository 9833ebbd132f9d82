// The iOS glue: helpers for the Notification Service Extension and the app's
// UNUserNotificationCenterDelegate. UserNotifications exists only on Apple platforms, so none
// of this is compiled on Linux (where the rest of the client is built and tested); keep it to
// thin calls into the Foundation-only code. tvOS has no notification responses: left out too.
#if canImport(UserNotifications) && !os(tvOS)
    import Foundation
    import UserNotifications

    /// What a push's payload says about it: the fields a report needs.
    public struct PushPayload: Sendable, Equatable {
        /// `noticeId`: the message id (a string or a number in the payload).
        public let messageId: String
        public let campaignId: String?
        /// `aps.alert.title`, or `aps.alert` when it is a plain string.
        public let title: String?

        /// Reads a notification's `userInfo`; `nil` when it has no `noticeId` (not one of ours).
        public init?(userInfo: [AnyHashable: Any]) {
            func text(_ value: Any?) -> String? {
                switch value {
                case let string as String: string.isEmpty ? nil : string
                case let number as NSNumber: number.stringValue
                default: nil
                }
            }
            guard let messageId = text(userInfo["noticeId"]) else { return nil }
            self.messageId = messageId
            campaignId = text(userInfo["campaignId"])
            let alert = (userInfo["aps"] as? [String: Any])?["alert"]
            title = text((alert as? [String: Any])?["title"]) ?? text(alert)
        }
    }

    /// The seed apps' App Group flag `shared_app_is_active`: the app sets it when it becomes
    /// active and clears it when it resigns; the extension reads it. It can be stale (a crash
    /// in the foreground leaves it `true`), which is why the extension reports anyway and the
    /// server deduplicates (DESIGN.md section 3).
    public enum SharedAppActiveFlag {
        public static let key = "shared_app_is_active"

        public static func read(appGroup: String) -> Bool? {
            UserDefaults(suiteName: appGroup)?.object(forKey: key) as? Bool
        }

        public static func write(_ active: Bool, appGroup: String) {
            UserDefaults(suiteName: appGroup)?.set(active, forKey: key)
        }
    }

    extension ClientConfiguration {
        /// `PushTrack/` in the App Group container: the queue directory the app and its
        /// extension share. `nil` when the group is not in the target's entitlements.
        public static func appGroupQueueDirectory(_ appGroup: String) -> URL? {
            FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: appGroup)?
                .appendingPathComponent("PushTrack", isDirectory: true)
        }
    }

    @available(macOS 10.14, *)
    extension PushTrackClient {
        /// For `UNNotificationServiceExtension.didReceive(_:withContentHandler:)`: records the
        /// arrival (`source` `extension`, `appActive` the App Group flag as it reads now), hands
        /// `content` (default: the request's own) to the content handler at once, then tries
        /// one upload in the time the system leaves the extension. The report is on disk before
        /// the handler runs, so an extension killed during the upload loses nothing: the next
        /// upload, from the app or the next extension, sends it.
        public func serviceExtensionDidReceive(
            _ request: UNNotificationRequest, appGroup: String,
            content: UNNotificationContent? = nil,
            contentHandler: (UNNotificationContent) -> Void
        ) {
            let recorded = recordArrival(
                request.content.userInfo, appActive: SharedAppActiveFlag.read(appGroup: appGroup),
                source: "extension")
            contentHandler(content ?? request.content)
            if recorded { uploadInBackground() }
        }

        /// For `userNotificationCenter(_:willPresent:withCompletionHandler:)`: the push arrived
        /// with the app in the foreground (`source` `foreground`, `appActive` true).
        public func willPresent(_ notification: UNNotification) {
            if recordArrival(
                notification.request.content.userInfo, appActive: true, source: "foreground")
            {
                uploadInBackground()
            }
        }

        /// For `userNotificationCenter(_:didReceive:withCompletionHandler:)`: a tap (action
        /// `click`), a button (its identifier) or a dismissal (with the category option
        /// `customDismissAction`), `source` `response`.
        public func didReceive(_ response: UNNotificationResponse, appActive: Bool? = nil) {
            let content = response.notification.request.content
            guard let payload = PushPayload(userInfo: content.userInfo) else { return }
            let dismissed = response.actionIdentifier == UNNotificationDismissActionIdentifier
            let action =
                response.actionIdentifier == UNNotificationDefaultActionIdentifier
                ? nil : response.actionIdentifier
            do {
                try record(
                    PushReport(
                        kind: dismissed ? .dismiss : .click, messageId: payload.messageId,
                        deviceId: context.deviceId, campaignId: payload.campaignId,
                        appActive: appActive, source: "response",
                        title: payload.title ?? (content.title.isEmpty ? nil : content.title),
                        action: dismissed ? nil : action))
                uploadInBackground()
            } catch {
                log("report not recorded: \(error)")
            }
        }

        /// Records an `app_open`; call it when the app becomes active.
        public func appDidBecomeActive() {
            do {
                try record(
                    PushReport(kind: .appOpen, messageId: nil, deviceId: context.deviceId))
                uploadInBackground()
            } catch {
                log("report not recorded: \(error)")
            }
        }

        private func recordArrival(_ userInfo: [AnyHashable: Any], appActive: Bool?, source: String)
            -> Bool
        {
            guard let payload = PushPayload(userInfo: userInfo) else { return false }
            do {
                try record(
                    PushReport(
                        kind: .arrival, messageId: payload.messageId, deviceId: context.deviceId,
                        campaignId: payload.campaignId, appActive: appActive, source: source,
                        title: payload.title))
                return true
            } catch {
                log("report not recorded: \(error)")
                return false
            }
        }

        /// One upload pass off the calling thread; a failure leaves the reports queued.
        private func uploadInBackground() {
            DispatchQueue.global(qos: .utility).async {
                _ = try? self.uploadPending(lockWait: 1)
            }
        }
    }
#endif
