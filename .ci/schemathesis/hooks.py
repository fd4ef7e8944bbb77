"""Schemathesis hooks for Spout (loaded through SCHEMATHESIS_HOOKS by .ci/schemathesis/run.sh).

They only swap one valid value for another, so the generated request keeps what it was testing:

- Schemathesis reads an SSE response until 20 events or the request timeout, but an NDJSON response to its end,
  and an NDJSON sequence stream without `count` never ends: such a request gets a `count`.
- Last-Event-ID is read by the SSE representation only (it names an event id); with it, an NDJSON or JSON
  request of the three stream routes asks for SSE instead, so the header is actually checked.
- A channel subscription (GET /channels/{name}, GET /subscribe) never ends by itself. As SSE, schemathesis stops reading it after
  its request timeout (2 s for that operation, schemathesis.toml) or 20 events; as NDJSON it would wait for an end
  that never comes, so a request that would get NDJSON (`format=ndjson`, or an Accept that prefers it) asks for
  SSE instead: the same subscription, parameters and checks, in the representation schemathesis can cut short.
  Tests/SpoutTests/Channels cover the NDJSON representation.

A deserializer for `application/x-ndjson` lets the response checks see NDJSON bodies: each line must be a JSON
object and the last one the documented final line (`{"end":…}` or `{"error":…}`).
"""

import json

import schemathesis

STREAM_ROUTES = {"/sequences/{name}", "/articles/stream", "/workflow/{userId}"}


CHANNEL_SUBSCRIPTIONS = {"/channels/{name}", "/subscribe"}


@schemathesis.hook
def map_case(context, case):
    if case.operation.path in CHANNEL_SUBSCRIPTIONS and case.operation.method.upper() == "GET":
        query = dict(case.query or {})
        accept = next((value for name, value in (case.headers or {}).items() if name.lower() == "accept"), "")
        # `format` wins over Accept. Any other value of `format` is left alone: it is a negative case.
        if query.get("format") == "ndjson" or ("format" not in query and "ndjson" in str(accept)):
            query["format"] = "sse"
            case.query = query
        return case
    if case.operation.path not in STREAM_ROUTES:
        return case
    query = dict(case.query or {})
    headers = case.headers or {}
    if any(name.lower() == "last-event-id" for name in headers) and query.get("format") in ("ndjson", "json"):
        query["format"] = "sse"
    if case.operation.path == "/sequences/{name}" and query.get("format") == "ndjson" and "count" not in query:
        query["count"] = 5
    case.query = query
    return case


@schemathesis.deserializer("application/x-ndjson")
def deserialize_ndjson(ctx, response):
    """An NDJSON body: every line a JSON object, the last one the documented final line, `{"end":{…}}` or
    `{"error":{…}}` (a body without it was cut). The operation's schema describes one line, so the last line
    is what schemathesis validates against it."""
    lines = [line for line in response.content.decode("utf-8").split("\n") if line]
    if not lines:
        raise ValueError("an NDJSON body without a single line (not even the end object)")
    objects = []
    for number, line in enumerate(lines, 1):
        value = json.loads(line)
        if not isinstance(value, dict):
            raise ValueError(f"NDJSON line {number} is not a JSON object: {line[:200]}")
        objects.append(value)
    if "end" not in objects[-1] and "error" not in objects[-1]:
        raise ValueError(f"the NDJSON body does not end with an end or error object: {lines[-1][:200]}")
    return objects[-1]
