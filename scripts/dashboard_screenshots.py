"""Fixture data and headless-Chromium screenshots for scripts/dashboard-screenshots.sh.

  dashboard_screenshots.py load URL ADMIN_TOKEN APP_ID WRITE_KEY
      registers sends over the API and posts the apps' events (seeded, so every run
      draws the same devices; times are relative to now, so they are recent).
  dashboard_screenshots.py shoot URL SESSION READ_TOKEN OUT_DIR
      drives `chromium --headless` over the Chrome DevTools Protocol (websocket-client):
      sets the session cookie (HttpOnly, SameSite=Strict, Path=/dashboard) in a throwaway
      profile, opens each page at laptop and phone sizes and saves full-page PNGs; then signs
      in through the form as a user would (a bad token, then READ_TOKEN) and checks where the
      browser lands and the cookie it keeps.
"""
import base64
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HOUR = 3600 * 1000


def request(url, method="GET", body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as response:
        return json.loads(response.read() or b"null")


def load(base, admin, app_id, write_key):
    rng = random.Random(20261129)
    now = int(time.time() * 1000)
    auth = {"Authorization": f"Bearer {admin}"}
    campaigns = [
        # campaign id, name (hostile on purpose: the page must escape it), notice type, messages
        ("spring-sale", 'Spring "big" sale <b>50%</b> off', "promo", [
            ("ss-1", "Spring sale starts", 30, [("ios", 1400), ("android", 900)]),
            ("ss-2", "Last chance", 8, [("ios", 1200), ("android", 700)]),
        ]),
        ("welcome", "Welcome series 🎉 — día 1", "onboarding", [
            ("wel-1", "Welcome to the app", 20, [("ios", 600), ("android", 500)]),
        ]),
        ("price-drop", None, None, [
            ("pd-1", "Your item is cheaper", 44, [("android", 800)]),
        ]),
    ]
    groups = {}  # (platform, version, locale) -> events
    for campaign_id, name, notice, messages in campaigns:
        if name or notice:
            request(f"{base}/api/v1/campaigns/{campaign_id}", "PUT",
                    {"name": name, "noticeType": notice, "appId": app_id}, auth)
        for message_id, title, hours_ago, sends in messages:
            sent_at = now - hours_ago * HOUR
            for platform, sent in sends:
                request(f"{base}/api/v1/campaigns/{campaign_id}/sends", "POST", {
                    "messageId": message_id, "title": title, "sentAt": sent_at, "sent": sent,
                    "failed": sent // 50, "platform": platform, "appId": app_id}, auth)
                for index in range(sent):
                    if rng.random() > 0.78:
                        continue  # never reported
                    device = f"{platform}-{index}"
                    version = rng.choice(["3.2", "3.2", "3.1", "3.0"])
                    locale = rng.choice(["en-US", "en-US", "zh-CN", "de-DE", "es-ES"])
                    events = groups.setdefault((platform, version, locale), [])
                    arrival = sent_at + int(rng.expovariate(1 / (20 * 60 * 1000)))
                    reported = rng.random() < 0.93  # the rest: a click without arrival report
                    if reported and arrival < now:
                        events.append({"pageId": "push", "category": "push_arrival",
                                       "messageId": message_id, "deviceId": device,
                                       "appActive": rng.random() < 0.25, "source": "extension",
                                       "timestamp": arrival})
                    roll = rng.random()
                    delay = int(rng.lognormvariate(7.5, 1.6) * 1000)
                    if roll < 0.22 and arrival + delay < now:
                        events.append({"pageId": "push", "category": "push_click",
                                       "action": "view", "messageId": message_id,
                                       "deviceId": device, "timestamp": arrival + delay})
                    elif roll < 0.3 and arrival + delay < now:
                        events.append({"pageId": "push", "category": "push_dismiss",
                                       "messageId": message_id, "deviceId": device,
                                       "timestamp": arrival + delay})
    posted = 0
    for (platform, version, locale), events in groups.items():
        headers = {"X-App-Key": write_key, "Version": version, "Accept-Language": locale,
                   "Device-Info": json.dumps({"platform": platform})}
        for start in range(0, len(events), 500):
            batch = events[start:start + 500]
            answer = request(f"{base}/customer-track/upload-event", "POST", batch, headers)
            posted += answer["accepted"]
    print(f"fixture: {posted} events posted", file=sys.stderr)


def shoot(base, session, token, out_dir):
    import websocket  # websocket-client, installed in .data/venv by the shell script

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        sys.exit("screenshots: chromium is not installed")
    profile = tempfile.mkdtemp(prefix="pushtrack-chromium.")
    process = subprocess.Popen(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--hide-scrollbars", "--remote-debugging-port=0", f"--user-data-dir={profile}",
         "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        for _ in range(200):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.1)
        port = int(open(port_file).read().split()[0])
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        target = next(p for p in pages if p["type"] == "page")
        ws = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=30,
                                         suppress_origin=True)
        counter = [0]
        events = []  # events that arrived while a call waited for its answer

        def call(method, **params):
            counter[0] += 1
            ws.send(json.dumps({"id": counter[0], "method": method, "params": params}))
            while True:
                message = json.loads(ws.recv())
                if message.get("id") == counter[0]:
                    if "error" in message:
                        raise RuntimeError(f"{method}: {message['error']}")
                    return message.get("result", {})
                if "method" in message:
                    events.append(message)

        def wait_for(event):
            while events:
                message = events.pop(0)
                if message["method"] == event:
                    return message
            while True:
                message = json.loads(ws.recv())
                if message.get("method") == event:
                    return message

        host = urllib.parse.urlsplit(base).hostname
        call("Page.enable")
        call("Network.enable")
        # The cookie as the server set it for curl: the browser sends it on /dashboard pages.
        call("Network.setCookie", name="pushtrack_session", value=session, domain=host,
             path="/dashboard", httpOnly=True, sameSite="Strict", secure=False)
        shots = [
            ("signin", "/dashboard/sign-in", False),
            ("list", "/dashboard", True),
            ("list-sorted", "/dashboard?sort=openRate&order=desc&tz=Asia/Shanghai", True),
            ("campaign", "/dashboard/campaign?id=spring-sale", True),
            ("campaign-shanghai-day",
             "/dashboard/campaign?id=spring-sale&tz=Asia/Shanghai&bucket=day", False),
            ("campaign-welcome", "/dashboard/campaign?id=welcome&tz=America/Los_Angeles", False),
        ]
        sizes = [("laptop", 1366, 900, 1, False), ("phone", 390, 844, 2, True)]
        os.makedirs(out_dir, exist_ok=True)
        for name, path, both in shots:
            for size, width, height, scale, mobile in (sizes if both else sizes[:1]):
                call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                     deviceScaleFactor=scale, mobile=mobile)
                events.clear()
                call("Page.navigate", url=base + path)
                wait_for("Page.loadEventFired")
                metrics = call("Page.getLayoutMetrics")
                content = metrics["cssContentSize"]
                shot = call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                            clip={"x": 0, "y": 0, "width": width,
                                  "height": max(height, content["height"]), "scale": 1})
                file = os.path.join(out_dir, f"{name}-{size}.png")
                with open(file, "wb") as output:
                    output.write(base64.b64decode(shot["data"]))
                print(f"screenshots: {file}", file=sys.stderr)
                if mobile:
                    # A phone shows one screen at a time: save each screen too.
                    screens = int((content["height"] + height - 1) // height)
                    for screen in range(screens):
                        shot = call("Page.captureScreenshot", format="png",
                                    captureBeyondViewport=True,
                                    clip={"x": 0, "y": screen * height, "width": width,
                                          "height": height, "scale": 1})
                        file = os.path.join(out_dir, f"{name}-{size}-screen{screen + 1}.png")
                        with open(file, "wb") as output:
                            output.write(base64.b64decode(shot["data"]))
        # The browser's own sign-in: its form post (with the Origin and Sec-Fetch-Site a real
        # browser sends) passes the server's CSRF check, and the cookie it keeps is HttpOnly
        # and SameSite=Strict.
        call("Emulation.setDeviceMetricsOverride", width=1366, height=900, deviceScaleFactor=1,
             mobile=False)
        call("Network.clearBrowserCookies")

        def submit(text):
            call("Page.navigate", url=base + "/dashboard")  # redirected to the form
            wait_for("Page.loadEventFired")
            events.clear()
            root = call("DOM.getDocument")["root"]["nodeId"]
            field = call("DOM.querySelector", nodeId=root, selector="#token")["nodeId"]
            call("DOM.focus", nodeId=field)
            call("Input.insertText", text=text)
            # A click on the button, as a user would.
            button = call("DOM.querySelector", nodeId=root, selector="button[type=submit]")
            quad = call("DOM.getBoxModel", nodeId=button["nodeId"])["model"]["content"]
            x, y = (quad[0] + quad[4]) / 2, (quad[1] + quad[5]) / 2
            for kind in ("mousePressed", "mouseReleased"):
                call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                     clickCount=1)
            wait_for("Page.loadEventFired")
            history = call("Page.getNavigationHistory")
            return history["entries"][history["currentIndex"]]["url"]

        landed = submit("pt_not-a-token")
        shot = call("Page.captureScreenshot", format="png")
        with open(os.path.join(out_dir, "signin-error-laptop.png"), "wb") as output:
            output.write(base64.b64decode(shot["data"]))
        if not landed.endswith("/dashboard/sign-in"):
            sys.exit(f"screenshots: a bad token led to {landed}, not the form")
        landed = submit(token)
        shot = call("Page.captureScreenshot", format="png")
        with open(os.path.join(out_dir, "signed-in-by-form-laptop.png"), "wb") as output:
            output.write(base64.b64decode(shot["data"]))
        cookies = call("Network.getCookies", urls=[base + "/dashboard"])["cookies"]
        session_cookie = next((c for c in cookies if c["name"] == "pushtrack_session"), None)
        if not landed.endswith("/dashboard") or not session_cookie:
            sys.exit(f"screenshots: the browser's sign-in led to {landed}, cookies {cookies}")
        if not session_cookie["httpOnly"] or session_cookie.get("sameSite") != "Strict" \
                or session_cookie["path"] != "/dashboard":
            sys.exit(f"screenshots: the session cookie lacks its attributes: {session_cookie}")
        print("screenshots: the browser signed in through the form", file=sys.stderr)
        ws.close()
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    {"load": load, "shoot": shoot}[command](*arguments)
