"""Schemathesis hooks for Spout (loaded through SCHEMATHESIS_HOOKS by .ci/schemathesis/run.sh).

They only swap one valid value for another, so the generated request keeps what it was testing:

- Schemathesis reads an SSE response until 20 events or the request timeout, but an NDJSON response to its end,
  and an NDJSON sequence stream without `count` never ends: such a request gets a `count`.
- Last-Event-ID is read by the SSE representation only (it names an event id); with it, an NDJSON or JSON
  request of the two stream routes asks for SSE instead, so the header is actually checked.
"""

import schemathesis

STREAM_ROUTES = {"/sequences/{name}", "/articles/stream"}


@schemathesis.hook
def map_case(context, case):
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
