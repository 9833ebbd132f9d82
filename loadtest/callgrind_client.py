"""Posts REQUESTS requests of BATCH events each (1 = a single event object), shaped like
events.lua's, on CONNECTIONS keep-alive connections (default 1: one after another; more: that many
requests in flight, so that a group commit holds several as under load); exits 1 on any answer but
200.
Usage: callgrind_client.py PORT WRITE_KEY REQUESTS BATCH [CONNECTIONS]"""
import http.client
import json
import sys
import threading
import time

port, key, requests, batch = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
connections = int(sys.argv[5]) if len(sys.argv) > 5 else 1
now = int(time.time() * 1000)
headers = {
    "Content-Type": "application/json",
    "X-App-Key": key,
    "Device-Info": '{"platform":"ios","os_version":"17.5","is_notification_enabled":true}',
    "Version": "3.2.1",
    "Accept-Language": "en-US;q=1.0",
}


def event(n):
    msg = n % 97
    return {
        "pageId": "push", "category": "push_click" if n % 5 == 0 else "push_arrival",
        "action": "view", "label": f"push_Sale {msg}", "messageId": f"m{msg}",
        "campaignId": f"c{msg % 7}", "deviceId": f"dev{n * 7919 % 1000000}",
        "appActive": n % 3 == 0, "source": "extension", "eventId": f"cg-{n}", "timestamp": now,
    }


failures = []


def post(first):
    """Posts requests first, first + connections, ... on a connection of its own."""
    connection = http.client.HTTPConnection("127.0.0.1", port)
    for r in range(first, requests, connections):
        if batch == 1:
            body = event(r)
        else:
            body = {"sentAt": now, "events": [event(r * batch + i) for i in range(batch)]}
        connection.request("POST", "/customer-track/upload-event", json.dumps(body), headers)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            failures.append(f"answer {response.status} to request {r}")
            return


threads = [threading.Thread(target=post, args=(c,)) for c in range(connections)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
if failures:
    sys.exit(failures[0])
