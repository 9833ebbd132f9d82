#!/usr/bin/env python3
"""Writes the hostile-input corpus (every case file and manifest.json) into this folder.

The files are checked in; run this only to change the corpus:
    python3 Tests/PushTrackServerTests/Corpus/generate.py
HostileInputTests.swift sends every case in manifest.json to a live server.

Case kinds:
- "body": the file is the body of POST /customer-track/upload-event, sent with a valid
  X-App-Key, Content-Type: application/json and a matching Content-Length; "headers" adds or
  replaces header fields.
- "raw": the file is the complete request, sent as it stands on a new connection after
  ${WRITE_KEY} is replaced with the app's write key; "halfClose" shuts down the sending side
  right after writing.
"answeredBy" says who answers: "server" (the JSON contract {"code","error","message"}, or the
200 acknowledgement), "libmicrohttpd" (its own HTML error, then it closes the connection) or
"nobody" (the connection is closed without a response). "stored" is how many rows the case
adds to `events`; "rejected" lists the per-event codes of a 200 or 422 answer.
"""

import base64
import gzip
import json
import os
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
INJECTION = "'; DROP TABLE events; --"

cases = []


def event(**fields):
    base = {"pageId": "push", "category": "push_arrival", "messageId": "m-1", "deviceId": "d-1"}
    base.update(fields)
    return base


def dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def body(name, data, status, error=None, *, stored=0, rejected=None, headers=None, note):
    if isinstance(data, str):
        data = data.encode("utf-8")
    write(name, data)
    case = {"file": name, "kind": "body", "status": status}
    if error:
        case["error"] = error
    case["answeredBy"] = "server"
    case["stored"] = stored
    if rejected:
        case["rejected"] = rejected
    if headers:
        case["headers"] = headers
    case["note"] = note
    cases.append(case)


def raw(name, data, status, error=None, *, answered_by="server", stored=0, half_close=False,
        note):
    write(name, data)
    case = {"file": name, "kind": "raw"}
    if status is not None:
        case["status"] = status
    if error:
        case["error"] = error
    case["answeredBy"] = answered_by
    case["stored"] = stored
    if half_close:
        case["halfClose"] = True
    case["note"] = note
    cases.append(case)


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as file:
        file.write(data)


def request(body_bytes, *, method="POST", path="/customer-track/upload-event",
            length=True, extra=(), close=True):
    """A raw HTTP/1.1 request with the write-key placeholder; `Connection: close` so that the
    server closes the connection once it has answered."""
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "X-App-Key: ${WRITE_KEY}",
            "Content-Type: application/json"]
    if close:
        head.append("Connection: close")
    if length:
        head.append(f"Content-Length: {len(body_bytes)}")
    head.extend(f"{name}: {value}" for name, value in extra)
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body_bytes


VALID = dumps(event()).encode()

# --- Malformed JSON --------------------------------------------------------------------------
body("malformed-json-missing-colon.json", '{"pageId" "push","category":"push_arrival"}',
     400, "invalid_json", note="a key without ':'")
body("malformed-json-single-quotes.json", "{'pageId':'push','category':'push_arrival'}",
     400, "invalid_json", note="single-quoted strings are not JSON")
body("malformed-json-trailing-comma.json", '{"pageId":"push","category":"push_arrival",}',
     400, "invalid_json", note="a comma before '}'")
body("truncated-json-mid-object.json", VALID[: len(VALID) // 2], 400, "invalid_json",
     note="a valid event cut in half")
body("truncated-json-mid-escape.json", '{"pageId":"push","label":"a\\u00', 400, "invalid_json",
     note="cut inside a \\u escape")
body("trailing-garbage.json", VALID + b" garbage", 400, "invalid_json",
     note="a valid event followed by non-whitespace: refused whole, nothing stored")
body("trailing-second-object.json", VALID + VALID, 400, "invalid_json",
     note="two concatenated objects are not one JSON document")
body("deep-nesting-arrays-10000.json", "[" * 10_000 + "]" * 10_000, 400, "invalid_json",
     note="10,000 nested arrays; the parser stops at depth 64 without recursing further")
nested = '{"a":' * 10_000 + "1" + "}" * 10_000
body("deep-nesting-objects-in-properties-10000.json",
     dumps(event())[:-1] + ',"properties":' + nested + "}", 400, "invalid_json",
     note="10,000 nested objects inside properties")

# --- Huge values -----------------------------------------------------------------------------
big = "x" * 900_000
body("huge-string-900kb-in-label.json", dumps(event(label=big)), 422, "all_events_invalid",
     rejected=["too_long"], note="a 900 KB label (limit 512 characters)")
body("huge-string-900kb-in-unknown-field.json", dumps(event(padding=big)), 200, stored=1,
     note="unknown fields are ignored: the event is stored without the 900 KB")
digits = "9" * 100_000
body("huge-number-100k-digits-as-messageId.json",
     dumps(event())[:-1].replace('"messageId":"m-1",', "") + ',"messageId":' + digits + "}",
     422, "all_events_invalid", rejected=["invalid_type"],
     note="a 100,000-digit integer is not an Int64 message id")
body("huge-number-100k-digits-as-timestamp.json",
     dumps(event())[:-1] + ',"timestamp":' + digits + "}", 422, "all_events_invalid",
     rejected=["invalid_timestamp"], note="a 100,000-digit epoch is out of range")
body("huge-number-1e400-in-properties.json",
     dumps(event())[:-1] + ',"properties":{"n":1e400}}', 422, "all_events_invalid",
     rejected=["invalid_value"], note="jsonb cannot store a number beyond a double")

# --- Encoding --------------------------------------------------------------------------------
prefix = dumps(event())[:-1].encode() + b',"label":"'
body("invalid-utf8-c3-28.bin", prefix + b"\xc3\x28" + b'"}', 400, "invalid_json",
     note="0xC3 followed by a non-continuation byte")
body("invalid-utf8-overlong-c0-af.bin", prefix + b"\xc0\xaf" + b'"}', 400, "invalid_json",
     note="overlong encoding of '/'")
body("invalid-utf8-encoded-surrogate-ed-a0-80.bin", prefix + b"\xed\xa0\x80" + b'"}', 400,
     "invalid_json", note="U+D800 encoded directly in UTF-8")
body("lone-surrogate-escape-d800.json", dumps(event())[:-1] + ',"label":"\\ud800"}', 400,
     "invalid_json", note="a high surrogate escape without its low half")
body("lone-low-surrogate-escape-dc00.json", dumps(event())[:-1] + ',"label":"\\udc00x"}', 400,
     "invalid_json", note="a low surrogate escape alone")
body("nul-byte-raw-in-string.bin", prefix + b"a\x00b" + b'"}', 400, "invalid_json",
     note="an unescaped NUL is a control character, not allowed in a JSON string")
body("nul-byte-raw-between-tokens.bin", VALID[:-1] + b"\x00}", 400, "invalid_json",
     note="a NUL where whitespace may stand")
body("nul-escape-in-deviceId.json", dumps(event())[:-1].replace("d-1", "d\\u0000x") + "}",
     422, "all_events_invalid", rejected=["invalid_value"],
     note="\\u0000 parses, but PostgreSQL text cannot store it")
body("nul-escape-in-label.json", dumps(event())[:-1] + ',"label":"push_\\u0000"}', 422,
     "all_events_invalid", rejected=["invalid_value"], note="\\u0000 in the label")
body("nul-escape-in-properties-value.json",
     dumps(event())[:-1] + ',"properties":{"k":"a\\u0000b"}}', 422, "all_events_invalid",
     rejected=["invalid_value"], note="jsonb cannot store U+0000")
body("nul-escape-in-properties-key.json",
     dumps(event())[:-1] + ',"properties":{"a\\u0000":1}}', 422, "all_events_invalid",
     rejected=["invalid_value"], note="a NUL in a properties key")
body("utf8-bom-then-event.json", b"\xef\xbb\xbf" + VALID, 200, stored=1,
     note="a leading byte order mark is skipped (RFC 8259 section 8.1)")

# --- Wrong types -----------------------------------------------------------------------------
body("wrong-type-pageId-number.json", dumps(event(pageId=42)), 422, "all_events_invalid",
     rejected=["invalid_type"], note="pageId must be a string")
body("wrong-type-category-array.json", dumps(event(category=["push_arrival"])), 422,
     "all_events_invalid", rejected=["invalid_type"], note="category must be a string")
body("wrong-type-appActive-maybe.json", dumps(event(appActive="maybe")), 422,
     "all_events_invalid", rejected=["invalid_value"],
     note='a string other than "true"/"false" for the boolean appActive')
body("wrong-type-timestamp-object.json", dumps(event(timestamp={"ms": 1764403200000})), 422,
     "all_events_invalid", rejected=["invalid_type"], note="timestamp must be a string or number")
body("wrong-type-properties-array.json", dumps(event(properties=[1, 2])), 422,
     "all_events_invalid", rejected=["invalid_type"], note="properties must be an object")
body("wrong-type-messageId-float.json", dumps(event(messageId=1.5)), 422, "all_events_invalid",
     rejected=["invalid_type"], note="messageId must be a string or an integer")
body("wrong-types-mixed-batch.json",
     dumps({"events": [event(deviceId="ok"), event(pageId=42), event(category=["x"]),
                       event(appActive="maybe"), event(timestamp={}), event(properties=[])]}),
     200, stored=1,
     rejected=["invalid_type", "invalid_type", "invalid_value", "invalid_type", "invalid_type"],
     note="the valid event is stored, the other five are listed in rejected")
body("array-of-non-objects.json", "[1, \"two\", null]", 422, "all_events_invalid",
     rejected=["not_an_object", "not_an_object", "not_an_object"],
     note="an array whose elements are not events")
body("top-level-string.json", '"push_arrival"', 400, "invalid_body",
     note="JSON, but not an event, a batch or an array")

# --- SQL injection (stored verbatim) ---------------------------------------------------------
body("sql-injection-every-field.json",
     dumps({"pageId": INJECTION, "category": INJECTION, "action": INJECTION, "label": INJECTION,
            "messageId": INJECTION, "campaignId": INJECTION, "deviceId": INJECTION,
            "source": INJECTION, "eventId": INJECTION,
            "properties": {INJECTION: INJECTION}}),
     200, stored=1, note="every string field holds the injection; it comes back byte-identical")
body("sql-and-copy-metacharacters.json",
     dumps(event(deviceId="d-copy", label="a\tb\nc\\.\n\\N\r$1 '' \"x\" \\", properties={
         "q": "Robert'); DROP TABLE deliveries;--", "copy": "\\.\n\\N\t", "dollar": "$$ $1"})),
     200, stored=1,
     note="tab, newline, backslash-dot, \\N and quotes in label and properties survive COPY")

# --- Duplicate keys --------------------------------------------------------------------------
body("duplicate-keys.json",
     '{"pageId":"push","category":"push_arrival","messageId":"m-1","deviceId":"d-1",'
     '"deviceId":"d-2"}', 400, "invalid_json",
     note="consumers disagree on which value wins, so the parser refuses (I-JSON)")
body("duplicate-keys-in-properties.json",
     dumps(event())[:-1] + ',"properties":{"a":1,"a":2}}', 400, "invalid_json",
     note="duplicate keys inside properties")

# --- Compression and content headers ---------------------------------------------------------
GZIP = {"Content-Encoding": "gzip"}
compressed = gzip.compress(VALID, mtime=0)
body("gzip-truncated.gz", compressed[: len(compressed) // 2], 400, "invalid_gzip", headers=GZIP,
     note="a gzip stream cut in half")
body("gzip-bomb-64mib-of-spaces.gz", gzip.compress(b" " * (64 << 20), 9, mtime=0), 413,
     "payload_too_large", headers=GZIP,
     note="64 MiB of spaces in about 64 KB; inflating stops at the 1 MiB limit")
body("gzip-declared-body-plain-json.json", VALID, 400, "invalid_gzip", headers=GZIP,
     note="Content-Encoding: gzip over an uncompressed body")
body("gzip-trailing-garbage.gz", compressed + b"garbage", 400, "invalid_gzip", headers=GZIP,
     note="bytes after the gzip member that are not another member")
body("gzip-of-nothing.gz", gzip.compress(b"", mtime=0), 400, "empty_body", headers=GZIP,
     note="a valid gzip stream that inflates to no bytes")
body("content-encoding-br.json", VALID, 415, "unsupported_encoding",
     headers={"Content-Encoding": "br"}, note="only gzip (or identity) is read")
body("content-type-text-plain.json", VALID, 200, stored=1,
     headers={"Content-Type": "text/plain"},
     note="what sendBeacon and many legacy clients send: read as JSON")
body("content-type-text-plain-charset.json", VALID, 200, stored=1,
     headers={"Content-Type": "text/plain;charset=UTF-8"},
     note="sendBeacon with a string body: read as JSON")
body("content-type-json-latin1-charset.json", VALID, 200, stored=1,
     headers={"Content-Type": "application/json; charset=ISO-8859-1"},
     note="any charset: JSON is UTF-8, and these bytes are ASCII")
body("content-type-form-urlencoded.json", VALID, 415, "unsupported_media_type",
     headers={"Content-Type": "application/x-www-form-urlencoded"},
     note="only JSON, text/plain or no type are read")
body("content-type-xml.json", VALID, 415, "unsupported_media_type",
     headers={"Content-Type": "application/xml"}, note="only JSON, text/plain or no type are read")

# --- Device-Info in the forms the apps send it ------------------------------------------------
# The seed apps' events: pageId/category/action/label only, the device named by the push token
# that DeviceInfoProvider puts in Device-Info.
SEED = dumps({"pageId": "push", "category": "push_arrival", "action": "view",
              "label": "push_Hello"}).encode()
# An FCM registration token has the shape <instance id>:APA91b… and about 160 characters.
FCM = "eXk3Zm9vYmFyYmF6cXV4:APA91b" + "Hq9Zx_Lm-2Rt" * 11 + "A1"
INFO = dumps({"fcm_token": FCM, "is_notification_enabled": True})
body("device-info-base64-fcm-token.json", SEED, 200, stored=1,
     headers={"Device-Info": base64.b64encode(INFO.encode()).decode()},
     note="Device-Info base64-encoded; the fcm_token identifies the device")
body("device-info-base64url-unpadded-fcm-token.json", SEED, 200, stored=1,
     headers={"Device-Info": base64.urlsafe_b64encode(INFO.encode()).decode().rstrip("=")},
     note="Device-Info in the URL alphabet without padding")
body("device-info-percent-fcm-token.json", SEED, 200, stored=1,
     headers={"Device-Info": urllib.parse.quote(INFO, safe="")},
     note="Device-Info percent-encoded")
body("device-info-base64-not-json.json", SEED, 422, "all_events_invalid",
     rejected=["missing_device_id"],
     headers={"Device-Info": base64.b64encode(b"fcm_token=abcdefgh12345678").decode()},
     note="base64 that is not JSON is ignored: the event has no device")
body("device-info-percent-broken-escape.json", SEED, 422, "all_events_invalid",
     rejected=["missing_device_id"],
     headers={"Device-Info": urllib.parse.quote(INFO, safe="")[:-3] + "%G"},
     note="a broken percent escape: ignored, never fatal")
body("device-info-base64-bad-length.json", SEED, 422, "all_events_invalid",
     rejected=["missing_device_id"],
     headers={"Device-Info": base64.b64encode(INFO.encode()).decode().rstrip("=") + "A===="},
     note="base64 with too much padding: ignored")
body("device-info-token-with-spaces.json", SEED, 422, "all_events_invalid",
     rejected=["missing_device_id"],
     headers={"Device-Info": dumps({"fcm_token": "<8a3c 11f0 9e2d 7b44>"})},
     note="a push token outside the token alphabet names no device")

# --- Empty and shape -------------------------------------------------------------------------
body("empty-body.txt", b"", 400, "empty_body", note="Content-Length: 0")
body("whitespace-only-body.txt", b" \r\n\t \n", 400, "invalid_json",
     note="whitespace is not a JSON value")
body("batch-501-events.json", dumps([event(deviceId=f"d-{i}") for i in range(501)]), 413,
     "payload_too_large", note="one more than the 500-event limit: refused whole")
body("batch-events-not-an-array.json",
     dumps({"sentAt": 1764403200000, "events": event()}), 400, "invalid_body",
     note="a batch whose events is an object; answered 422 missing_field before the fix")
body("sentAt-and-timestamp-centuries-apart.json",
     dumps({"sentAt": "3523-04-15T15:32:44Z", "events": [event(timestamp="0537-04-21T08:04:26Z")]}),
     200, stored=1,
     note="valid times 3,000 years apart: the skew correction overflowed and crashed the server "
     "before the fix (found by scripts/schemathesis.sh); stored with the received time, too_old")

# --- Raw HTTP ----------------------------------------------------------------------------------
raw("header-100kb.http", request(VALID, extra=[("X-Padding", "a" * 100_000)]), 431,
    answered_by="libmicrohttpd",
    note="a header block beyond libmicrohttpd's connection memory: its HTML 431, then close")
raw("headers-2000.http", request(VALID, extra=[(f"X-Header-{i}", "v") for i in range(2000)]),
    431, answered_by="libmicrohttpd", note="2,000 header fields (about 35 KB): HTML 431, close")
raw("content-length-shorter-than-body.http",
    request(VALID, length=False, extra=[("Content-Length", str(len(VALID) - 10))]),
    400, "invalid_json",
    note="only Content-Length bytes are the body, so the JSON is cut; the rest is never read")
raw("content-length-longer-then-closed.http",
    request(VALID, length=False, extra=[("Content-Length", str(len(VALID) + 50))]),
    None, answered_by="nobody", half_close=True,
    note="the client closes before the promised body: no handler runs, nothing is stored")
chunked = b"%x\r\n" % len(VALID) + VALID + b"\r\n0\r\n\r\n"
raw("content-length-with-chunked.http",
    request(chunked, length=False,
            extra=[("Content-Length", "5"), ("Transfer-Encoding", "chunked")]),
    400, "ambiguous_length",
    note="request smuggling shape; libmicrohttpd alone read it chunked and stored the event")
raw("content-length-twice-different.http",
    request(VALID, length=False,
            extra=[("Content-Length", str(len(VALID))), ("Content-Length", "5")]),
    400, "ambiguous_length", note="libmicrohttpd alone used the first value and stored the event")
raw("content-length-twice-same.http",
    request(VALID, length=False,
            extra=[("Content-Length", str(len(VALID))), ("Content-Length", str(len(VALID)))]),
    200, stored=1, note="identical repeated values are one length (RFC 9110 section 8.6)")
raw("content-length-not-a-number.http",
    request(VALID, length=False, extra=[("Content-Length", "abc")]), 400,
    answered_by="libmicrohttpd", note="libmicrohttpd's HTML 400, then close")
raw("content-length-negative.http",
    request(VALID, length=False, extra=[("Content-Length", "-5")]), 400,
    answered_by="libmicrohttpd", note="libmicrohttpd's HTML 400, then close")
raw("content-length-overflowing.http",
    request(VALID, length=False, extra=[("Content-Length", "9" * 30)]), 413,
    answered_by="libmicrohttpd", note="a length beyond 64 bits: libmicrohttpd's HTML 413, close")
raw("chunked-bad-chunk-size.http",
    request(b"zz\r\n" + VALID + b"\r\n0\r\n\r\n", length=False,
            extra=[("Transfer-Encoding", "chunked")]),
    400, answered_by="libmicrohttpd", note="libmicrohttpd's HTML 400, then close")
raw("request-line-garbage.http", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 hello\r\n\r\n",
    400, answered_by="libmicrohttpd",
    note="a TLS ClientHello-like line: libmicrohttpd's HTML 400, then close")
raw("http09-get.http", b"GET /\r\n", 400, answered_by="libmicrohttpd",
    note="HTTP/0.9 has no version: libmicrohttpd's HTML 400, then close")
raw("header-line-without-colon.http",
    request(VALID).replace(b"Connection: close", b"Connection: close\r\nNoColonHere"), 400,
    answered_by="libmicrohttpd", note="libmicrohttpd's HTML 400, then close")
raw("method-brew.http", request(VALID, method="BREW"), 405, "method_not_allowed",
    note="an unknown method on a known path: 405 with Allow: POST")
raw("method-brew-unknown-path.http", request(b"", method="BREW", path="/coffee"), 404,
    "not_found", note="an unknown method on an unknown path")
raw("path-percent-00.http", request(VALID, path="/customer-track/upload-event%00.php"), 404,
    "not_found", note="libmicrohttpd decoded %00 to NUL and the path was cut there: this "
    "reached the ingestion route and stored the event before the fix")
raw("path-percent-00-only.http", request(VALID, path="/customer-track/upload-event%00"), 404,
    "not_found", note="a path that ends in %00")
raw("path-dot-dot.http", request(VALID, path="/healthz/../customer-track/upload-event"), 404,
    "not_found", note="paths are not normalized: '..' is a segment like any other")
raw("path-dot-dot-encoded.http",
    request(VALID, path="/customer-track/%2e%2e/customer-track/upload-event"), 404, "not_found",
    note="percent-encoded '..'")
raw("sql-injection-in-headers.http",
    request(dumps({"pageId": "push", "category": "push_arrival", "messageId": "m-1"}).encode(),
            extra=[("Version", INJECTION), ("Build", INJECTION),
                          ("Accept-Language", INJECTION),
                          ("Device-Info", dumps({"device_id": INJECTION, "platform": INJECTION,
                                                 "os_version": INJECTION}))]),
    200, stored=1,
    note="Version, Build and Device-Info (which gives the device id) are stored verbatim; "
    "Accept-Language is not a language tag, so no locale")
raw("header-value-with-nul.http", request(VALID, extra=[("Version", "1.0\x00evil")]), 200,
    stored=1, note="libmicrohttpd ends a header value at a NUL: stored as Version 1.0")
raw("missing-host-header.http",
    request(VALID).replace(b"Host: 127.0.0.1\r\n", b""), 200, stored=1,
    note="libmicrohttpd 0.9.75 does not require Host from HTTP/1.1 clients")

manifest = {
    "description": __doc__[__doc__.index("Case kinds:"):].strip().split("\n"),
    "cases": cases,
}
with open(os.path.join(HERE, "manifest.json"), "w") as file:
    json.dump(manifest, file, indent=2, ensure_ascii=False)
    file.write("\n")
print(f"{len(cases)} cases")
