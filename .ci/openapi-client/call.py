"""usage: call.py BASE_URL

Calls a live Spout through the client that openapi-python-client generated from its /openapi.json (the package
`spout_client`, installed by run.sh), using only the client's API functions, and checks the parsed models: the
service routes, a JSON sequence, the upstream routes over the built-in demo upstream, the workflow as JSON, a 404
problem, and a publish read back from the channel's latest event. Prints one line per check; exits 1 on the
first failed one (an exception from the client, a wrong status or a wrong field).
"""

import sys
import uuid

import httpx
from spout_client import Client
from spout_client.api.articles import get_article, get_dashboard, get_profile, list_articles, run_workflow
from spout_client.api.channels import get_channel_latest, list_channels, publish_channel_events
from spout_client.api.demo import demo_get_user
from spout_client.api.sequences import get_sequence, list_sequences
from spout_client.api.service import get_health, get_ready
from spout_client.models import (
    Article,
    ArticleList,
    ChannelEvent,
    ChannelList,
    ChannelPublication,
    ChannelPublished,
    Dashboard,
    GetSequenceFormat,
    GetSequenceName,
    Health,
    Problem,
    ProblemType,
    Profile,
    Ready,
    RunWorkflowFormat,
    SequenceDocument,
    SequenceList,
    User,
    WorkflowSummary,
)
from spout_client.types import Unset

passed = 0


def check(condition, what):
    """One assertion: counted when it holds, the end of the run when it does not."""
    global passed
    if not condition:
        print(f"FAIL: {what}", flush=True)
        sys.exit(1)
    passed += 1
    print(f"ok: {what}", flush=True)


def parsed(response, status, model, what):
    """The parsed body of `response`, after checking its status and that it parsed as `model`."""
    check(response.status_code == status, f"{what}: status {int(response.status_code)} == {status}")
    check(isinstance(response.parsed, model), f"{what}: parsed as {model.__name__} ({type(response.parsed).__name__})")
    return response.parsed


def main(base_url):
    # Undocumented statuses raise instead of parsing as None; every wait is bounded by the timeout.
    client = Client(base_url=base_url, raise_on_unexpected_status=True, timeout=httpx.Timeout(15.0))
    with client:
        health = parsed(get_health.sync_detailed(client=client), 200, Health, "GET /health")
        check(health.status == "ok", "health.status == 'ok'")

        ready = parsed(get_ready.sync_detailed(client=client), 200, Ready, "GET /ready")
        check(ready.ready is True, "ready.ready is True")

        sequences = parsed(list_sequences.sync_detailed(client=client), 200, SequenceList, "GET /sequences")
        names = [item.name for item in sequences.sequences]
        check({"fibonacci", "naturals", "primes", "factorial"} <= set(names), f"the sequences listed: {names}")
        check(
            all(item.path == f"/sequences/{item.name}" and item.max_start > 0 for item in sequences.sequences),
            "each sequence's path and maxStart",
        )
        check("json" in [f.value for f in sequences.formats], "the formats include json")

        # The route that crashed generated clients while text/event-stream was its first media type (issue 25).
        fibonacci = parsed(
            get_sequence.sync_detailed(
                GetSequenceName.FIBONACCI, client=client, count=12, start=3, format_=GetSequenceFormat.JSON
            ),
            200,
            SequenceDocument,
            "GET /sequences/fibonacci?count=12&start=3&format=json",
        )
        check(fibonacci.sequence.value == "fibonacci", "document.sequence == fibonacci")
        check(fibonacci.start == 3 and fibonacci.count == 12, "document.start == 3, document.count == 12")
        check(
            fibonacci.values == ["2", "3", "5", "8", "13", "21", "34", "55", "89", "144", "233", "377"],
            f"F(3)…F(14): {fibonacci.values}",
        )
        factorial = parsed(
            get_sequence.sync_detailed(
                GetSequenceName.FACTORIAL, client=client, count=1, start=25, format_=GetSequenceFormat.JSON
            ),
            200,
            SequenceDocument,
            "GET /sequences/factorial?count=1&start=25&format=json",
        )
        check(factorial.values == ["15511210043330985984000000"], "25! exact, past 64 bits")

        articles = parsed(list_articles.sync_detailed(client=client, user_id=2), 200, ArticleList, "GET /articles")
        check(len(articles.articles) > 0, f"user 2 has articles ({len(articles.articles)})")
        check(all(article.user_id == 2 for article in articles.articles), "every article is user 2's")

        article = get_article.sync(1, client=client)
        check(isinstance(article, Article), "GET /articles/1 (sync) parsed as Article")
        check(article.id == 1 and article.user_id == 1, "article 1 is user 1's")
        check(article.title != "" and article.body != "", "article 1 has a title and a body")

        profile = parsed(get_profile.sync_detailed(1, client=client), 200, Profile, "GET /users/1/profile")
        check(profile.user.id == 1 and "@" in profile.user.email, "profile.user is user 1, with an email")
        check(len(profile.posts) > 0 and all(p.user_id == 1 for p in profile.posts), "profile.posts are user 1's")

        dashboard = parsed(get_dashboard.sync_detailed(1, client=client), 200, Dashboard, "GET /dashboard/1")
        check(dashboard.user_id == 1 and isinstance(dashboard.user, User), "dashboard.userId == 1, with its user")
        check(dashboard.errors == [], "the dashboard is whole (no errors)")
        check(dashboard.open_todos is not None and all(not t.completed for t in dashboard.open_todos), "open todos")

        user = parsed(demo_get_user.sync_detailed("1", client=client), 200, User, "GET /demo/users/1")
        check(user.id == profile.user.id and user.username == profile.user.username, "the demo user is the profile's")

        # The other route of issue 25: JSON is the summary alone.
        summary = parsed(
            run_workflow.sync_detailed(1, client=client, format_=RunWorkflowFormat.JSON),
            200,
            WorkflowSummary,
            "GET /workflow/1?format=json",
        )
        check(summary.user.id == 1, "summary.user.id == 1")
        check(summary.posts == len(profile.posts), f"summary.posts == {len(profile.posts)} (the profile's)")
        # `open` is a Python builtin, so the generator names the field `open_`.
        todos = summary.todos
        check(not isinstance(todos, Unset) and todos.open_ + todos.completed > 0, "summary.todos counted")
        check(not isinstance(summary.steps, Unset) and len(summary.steps) > 0, "summary.steps listed")

        missing = parsed(get_article.sync_detailed(999_999, client=client), 404, Problem, "GET /articles/999999")
        # The enum's members are VALUE_0…: the URIs start with "/", which no Python name can; compare values.
        check(missing.type_ == ProblemType("/problems/not-found"), f"problem type {missing.type_.value}")
        check(missing.status == 404 and missing.instance == "/articles/999999", "problem status and instance")
        check(missing.upstream_status == 404, "problem.upstreamStatus == 404")

        # A publish (loopback needs no token), then the channel's newest event.
        channel = f"openapi-client-{uuid.uuid4().hex[:12]}"
        note = {"text": "from the generated client", "n": 7, "tags": ["a", "b"], "nested": {"ok": True}}
        published = parsed(
            publish_channel_events.sync_detailed(
                channel, client=client, body=ChannelPublication.from_dict({"data": note, "event": "note"})
            ),
            202,
            ChannelPublished,
            f"POST /channels/{channel}/events",
        )
        check(published.channel == channel and len(published.ids) == 1, "published: the channel and one id")
        first = parsed(
            get_channel_latest.sync_detailed(channel, client=client),
            200,
            ChannelEvent,
            f"GET /channels/{channel}/latest",
        )
        check(first.id == published.ids[0], f"latest.id is the published id {published.ids[0]}")
        check(first.event == "note" and first.data == note, f"latest is the event published: {first.to_dict()}")
        batch = parsed(
            publish_channel_events.sync_detailed(
                channel,
                client=client,
                body=[ChannelPublication.from_dict({"data": n}) for n in (1, 2)],
                idempotency_key='"openapi-client-batch"',
            ),
            202,
            ChannelPublished,
            f"POST /channels/{channel}/events (a batch of 2)",
        )
        check(len(batch.ids) == 2, "the batch got two ids")
        latest = parsed(
            get_channel_latest.sync_detailed(channel, client=client),
            200,
            ChannelEvent,
            f"GET /channels/{channel}/latest (after the batch)",
        )
        check(latest.id == batch.ids[-1] and latest.data == 2, f"latest is the batch's last: {latest.to_dict()}")
        check(isinstance(latest.event, Unset), "latest has no event type (none was given)")
        listed = parsed(list_channels.sync_detailed(client=client), 200, ChannelList, "GET /channels")
        entry = [c for c in listed.channels if c.name == channel]
        check(len(entry) == 1 and entry[0].last_id == batch.ids[-1], "the channel is listed with its last id")
        check(entry[0].history_events == 3, "its history holds the 3 events")

        unknown = parsed(
            get_channel_latest.sync_detailed(channel + "-none", client=client),
            404,
            Problem,
            "GET /channels/…-none/latest",
        )
        check(unknown.type_.value == "/problems/not-found", "a channel never published to: not-found problem")

    print(f"openapi client: all {passed} checks held", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
