"""Limits on abuse at the API and the sign-in page: mutation, research and chat rates per user
(aliases and fragments counted), guessed tokens per address, read-only and expiring tokens,
sign-in lockout. Every refusal is a typed error (429 `rate_limited` with Retry-After), never a
500, and an unreachable cache lets requests through."""

import json
from datetime import timedelta

import pytest
from django.contrib.auth import authenticate
from django.test import Client, RequestFactory
from django.utils import timezone

from accounts.models import ApiToken
from accounts.services import api_token_create
from config.ratelimit import client_address
from corpora.services import corpus_create
from tests.api.conftest import GraphQL, gid

MARK = "mutation { markNotificationsRead { marked errors { code } } }"
START = (
    'mutation($c: ID!) { startResearchReport(corpusId: $c, prompt: "Research liability") '
    "{ errors { code } report { id } } }"
)
CHAT = 'mutation($c: ID!) { sendChatMessage(corpusId: $c, content: "hello") { errors { code } } }'
READ = "{ corpora { edges { node { id } } } }"


@pytest.fixture
def limits(settings):
    def apply(**rates: str) -> None:
        settings.RATE_LIMITS = {**settings.RATE_LIMITS, **rates}

    return apply


def limited(response: tuple[int, dict]) -> int:
    """The retry-after of a rate_limited answer (fails on anything else)."""
    status, body = response
    assert status == 429, body
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "rate_limited"
    return error["extensions"]["retryAfter"]


def test_mutations_past_the_rate_are_refused_with_retry_after_and_queries_go_on(gql, limits):
    limits(mutations="5/m")
    assert [gql(MARK)[0] for _ in range(5)] == [200] * 5
    response = gql.client.post(
        "/graphql",
        data=json.dumps({"query": MARK}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {gql.token}",
    )
    assert response.status_code == 429
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= 60
    assert response.json()["errors"][0]["extensions"] == {"code": "rate_limited", "retryAfter": retry_after}
    assert gql(READ)[0] == 200


def test_each_alias_counts(gql, limits):
    limits(mutations="5/m")
    aliases = "mutation { " + " ".join(f"m{i}: markNotificationsRead {{ marked }}" for i in range(6)) + " }"
    limited(gql(aliases))


def test_fields_behind_fragments_count(gql, limits):
    limits(mutations="5/m")
    through_fragments = (
        "mutation { ...A ... on Mutation { x: markNotificationsRead { marked } } } "
        "fragment A on Mutation { a: markNotificationsRead { marked } b: markNotificationsRead { marked } }"
    )
    assert gql(through_fragments)[0] == 200  # three of the five
    limited(gql(through_fragments))  # three more: six


def test_a_mutation_the_schema_refuses_counts_against_no_rate(gql, user, limits):
    # given a research rate of 2 a minute
    limits(research="2/m", mutations="100/m")
    corpus = corpus_create(creator=user, name="Contracts")
    invalid = START.replace("report { id }", "report { noSuchField }")
    # when ten starts select a field that does not exist
    refused = [gql(invalid, {"c": gid("Corpus", corpus.pk)}) for _ in range(10)]
    # then each is an invalid query, and a valid start still goes through
    assert {status for status, _ in refused} == {400}
    assert {body["errors"][0]["extensions"]["code"] for _, body in refused} == {"invalid_query"}
    status, body = gql(START, {"c": gid("Corpus", corpus.pk)})
    assert status == 200 and body["data"]["startResearchReport"]["errors"] == [], body


def test_a_research_start_refused_by_its_checks_spends_no_research_rate(gql, user, limits):
    # given a research rate of 2 a minute
    limits(research="2/m", mutations="100/m")
    corpus = corpus_create(creator=user, name="Contracts")
    blank = START.replace('prompt: "Research liability"', 'prompt: "   "')
    assert blank != START
    # when ten starts are refused for their blank prompt
    refused = [gql(blank, {"c": gid("Corpus", corpus.pk)}) for _ in range(10)]
    assert {b["data"]["startResearchReport"]["errors"][0]["code"] for _, b in refused} == {"prompt_invalid"}
    # then two valid starts still go through (on two corpora), and the third is limited
    second = corpus_create(creator=user, name="Leases")
    for room in (corpus, second):
        status, body = gql(START, {"c": gid("Corpus", room.pk)})
        assert status == 200 and body["data"]["startResearchReport"]["errors"] == [], body
    limited(gql(START, {"c": gid("Corpus", corpus_create(creator=user, name="Deeds").pk)}))


def test_research_starts_have_their_own_rate(gql, user, limits):
    limits(research="2/m", mutations="100/m")
    rooms = [corpus_create(creator=user, name=f"Room {i}") for i in range(3)]
    for room in rooms[:2]:
        status, body = gql(START, {"c": gid("Corpus", room.pk)})
        assert (status, body["data"]["startResearchReport"]["errors"]) == (200, [])
    limited(gql(START, {"c": gid("Corpus", rooms[2].pk)}))
    assert gql(MARK)[0] == 200  # other mutations are not held back


def test_chat_messages_have_their_own_rate(gql, corpus, limits):
    limits(chat="1/m")
    assert gql(CHAT, {"c": gid("Corpus", corpus.pk)})[0] == 200
    limited(gql(CHAT, {"c": gid("Corpus", corpus.pk)}))


def searches(count: int, *, fragment: bool = False) -> str:
    """One request of `count` aliased searches of the corpus $c (the last behind a fragment)."""
    fields = [
        f's{n}: search(corpusId: $c, query: "liability", topK: 500, mode: HYBRID) {{ score }}'
        for n in range(count)
    ]
    if not fragment:
        return "query($c: ID!) { " + " ".join(fields) + " }"
    return (
        "query($c: ID!) { "
        + " ".join(fields[:-1])
        + " ...more } fragment more on Query { "
        + fields[-1]
        + " }"
    )


def test_a_request_with_more_searches_than_the_cap_is_refused_with_its_code(gql, corpus, settings):
    # given the cap of 5 searches a request
    settings.GRAPHQL_MAX_SEARCHES = 5
    c = {"c": gid("Corpus", corpus.pk)}
    # when
    five = gql(searches(5), c)
    six = gql(searches(6, fragment=True), c)
    many = gql(searches(199), c)
    # then
    assert five[0] == 200 and "errors" not in five[1], five
    refused = "a request may search at most 5 times; it has {}"
    assert six == (
        400,
        {"errors": [{"message": refused.format(6), "extensions": {"code": "too_many_searches"}}]},
    )
    assert many[1]["errors"][0]["message"] == refused.format(199)


def test_searches_past_the_rate_are_refused_with_retry_after(gql, other_gql, corpus, limits):
    # given a rate of 8 searches a minute
    limits(search="8/m")
    c = {"c": gid("Corpus", corpus.pk)}
    # when
    answers = [gql(searches(4), c)[0], gql(searches(4), c)[0]]
    # then the next search is refused, other queries and other users go on
    assert answers == [200, 200]
    assert limited(gql(searches(1), c)) > 0
    assert gql(READ)[0] == 200
    assert other_gql(READ)[0] == 200


def test_a_users_tokens_share_one_count_and_other_users_have_their_own(gql, other_gql, user, limits):
    limits(mutations="3/m")
    second = GraphQL(Client(), token=api_token_create(user=user, name="second").secret)
    assert [gql(MARK)[0], second(MARK)[0], gql(MARK)[0]] == [200, 200, 200]
    limited(second(MARK))
    assert other_gql(MARK)[0] == 200


def test_anonymous_mutations_are_counted_per_address(anonymous_gql, limits):
    limits(mutations="2/m")
    assert [anonymous_gql(MARK)[0] for _ in range(2)] == [200, 200]
    limited(anonymous_gql(MARK))
    elsewhere = Client(REMOTE_ADDR="10.0.0.9")
    assert GraphQL(elsewhere)(MARK)[0] == 200


def test_guessed_tokens_are_refused_per_address_past_the_rate(db, limits):
    limits(token_failures="3/m")
    guesser = GraphQL(Client(), token="dc_guess")
    assert [guesser(READ)[0] for _ in range(3)] == [401] * 3
    limited(guesser(READ))
    assert GraphQL(Client(REMOTE_ADDR="10.0.0.9"), token="dc_guess")(READ)[0] == 401


def test_a_read_only_token_queries_but_cannot_mutate(user, corpus):
    reader = GraphQL(Client(), token=api_token_create(user=user, name="dashboard", read_only=True).secret)
    assert reader(READ)[0] == 200
    status, body = reader(MARK)
    assert (status, body["errors"][0]["extensions"]["code"]) == (403, "token_read_only")


def test_an_expired_token_is_refused(user):
    issued = api_token_create(user=user, name="short-lived", expires_in_days=1)
    client = GraphQL(Client(), token=issued.secret)
    assert client(READ)[0] == 200
    past = timezone.now() - timedelta(seconds=1)
    ApiToken.objects.filter(pk=issued.token.pk).update(expires_at=past)
    status, body = client(READ)
    assert (status, body["errors"][0]["extensions"]["code"]) == (401, "invalid_token")


def test_create_api_token_takes_an_expiry_and_a_scope(gql):
    create = (
        'mutation($d: Int, $r: Boolean) { createApiToken(name: "ci", expiresInDays: $d, readOnly: $r) '
        "{ errors { code field } token { expiresAt readOnly isActive } } }"
    )
    made = gql.data(create, {"d": 30, "r": True})["createApiToken"]
    assert made["errors"] == [] and made["token"]["readOnly"] and made["token"]["isActive"]
    assert made["token"]["expiresAt"] is not None
    for days in (0, -1, 3651):
        refused = gql.data(create, {"d": days})["createApiToken"]
        assert refused["errors"] == [{"code": "token_expiry_invalid", "field": "expiresInDays"}]


FOREVER = (
    'mutation($d: Int) { createApiToken(name: "forever", expiresInDays: $d) '
    "{ errors { code } secret token { expiresAt readOnly } } }"
)


def test_a_token_made_with_a_token_expires_no_later_than_it(user):
    # given a token that expires in a day
    day = api_token_create(user=user, name="day pass", expires_in_days=1)
    gql = GraphQL(Client(), token=day.secret)
    # when it asks for a token that never expires, and for one of a year
    forever = gql.data(FOREVER)["createApiToken"]
    year = gql.data(FOREVER, {"d": 365})["createApiToken"]
    # then both expire when it does, and are refused once it has expired
    assert forever["errors"] == [] and year["errors"] == []
    made = ApiToken.objects.filter(name="forever")
    assert [t.expires_at for t in made] == [day.token.expires_at] * 2
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    for secret in (forever["secret"], year["secret"]):
        status, body = GraphQL(Client(), token=secret)(READ)
        assert (status, body["errors"][0]["extensions"]["code"]) == (401, "invalid_token")


def test_a_token_made_with_a_token_may_expire_sooner_and_one_made_signed_in_never(user):
    # given a token that expires in 30 days, and a session
    month = GraphQL(Client(), token=api_token_create(user=user, name="month", expires_in_days=30).secret)
    browser = Client()
    browser.force_login(user)
    # when
    week = month.data(FOREVER, {"d": 7})["createApiToken"]
    response = browser.post("/graphql", data=json.dumps({"query": FOREVER}), content_type="application/json")
    # then a sooner expiry stands, and a session (no token) still makes a token that never expires
    assert week["errors"] == [] and response.json()["data"]["createApiToken"]["errors"] == []
    week_made, session_made = ApiToken.objects.filter(name="forever").order_by("pk")
    assert week_made.expires_at < timezone.now() + timedelta(days=8)
    assert session_made.expires_at is None


def test_a_read_only_token_cannot_make_a_token(user):
    # given
    reader = GraphQL(Client(), token=api_token_create(user=user, name="reader", read_only=True).secret)
    # when
    status, body = reader(FOREVER)
    # then
    assert (status, body["errors"][0]["extensions"]["code"]) == (403, "token_read_only")
    assert not ApiToken.objects.filter(name="forever").exists()


def test_an_unreachable_cache_lets_requests_through(gql, limits, settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
        }
    }
    limits(mutations="1/m")
    assert [gql(MARK)[0] for _ in range(3)] == [200] * 3


# --- sign-in lockout --------------------------------------------------------------------------
def sign_in(client: Client, password: str):
    return client.post("/accounts/login/", {"username": "alice", "password": password})


def test_a_thousand_wrong_passwords_lock_the_account_out_and_never_500(user, settings):
    client = Client()
    statuses = [sign_in(client, f"wrong {i}").status_code for i in range(1_000)]
    limit = settings.AXES_FAILURE_LIMIT
    assert statuses[: limit - 1] == [200] * (limit - 1)  # the form again, with its error
    assert set(statuses[limit - 1 :]) == {429}
    # the right password does not get through a lock either
    locked = sign_in(client, "pw-alice-123")
    assert locked.status_code == 429
    assert b"Signing in is paused" in locked.content
    # another address is not locked out
    assert sign_in(Client(REMOTE_ADDR="10.0.0.9"), "pw-alice-123").status_code == 302


def test_a_successful_sign_in_resets_the_count(user, settings):
    client = Client()
    for i in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in(client, f"wrong {i}")
    assert sign_in(client, "pw-alice-123").status_code == 302
    client.logout()
    for i in range(settings.AXES_FAILURE_LIMIT - 1):
        assert sign_in(client, f"wrong again {i}").status_code == 200
    assert sign_in(client, "pw-alice-123").status_code == 302


def test_authenticate_with_a_request_still_works(user):
    request = RequestFactory().post("/accounts/login/")
    assert authenticate(request, username="alice", password="pw-alice-123") == user


def test_counts_kept_in_redis_limit_as_in_memory(gql, limits, settings):
    redis = pytest.importorskip("redis")
    url = "redis://127.0.0.1:6379/12"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).flushdb()
    except redis.RedisError:
        pytest.skip("needs Redis at 127.0.0.1:6379")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}}
    limits(mutations="2/m")
    assert [gql(MARK)[0] for _ in range(2)] == [200, 200]
    limited(gql(MARK))
    keys = redis.Redis.from_url(url).keys("*ratelimit:mutations:user:*")
    assert len(keys) == 1 and redis.Redis.from_url(url).ttl(keys[0]) > 0
    redis.Redis.from_url(url).flushdb()


@pytest.mark.parametrize(
    ("proxies", "forwarded", "remote", "expected"),
    [
        (0, "203.0.113.9", "10.0.0.1", "10.0.0.1"),  # no proxy trusted: the header is ignored
        (1, "198.51.100.7, 203.0.113.9", "10.0.0.1", "203.0.113.9"),  # the proxy's view
        (2, "198.51.100.7, 203.0.113.9", "10.0.0.1", "198.51.100.7"),
        (1, "not-an-address", "10.0.0.1", "10.0.0.1"),  # garbage: the socket's address
        (2, "203.0.113.9", "10.0.0.1", "10.0.0.1"),  # fewer hops than proxies
        (0, "", "unix-socket", ""),
    ],
)
def test_the_client_address_is_an_ip_the_trusted_proxies_saw(settings, proxies, forwarded, remote, expected):
    settings.TRUSTED_PROXY_COUNT = proxies
    request = RequestFactory().get("/", HTTP_X_FORWARDED_FOR=forwarded, REMOTE_ADDR=remote)
    assert client_address(request) == expected


def test_a_forged_forwarded_header_at_sign_in_is_not_a_500(user, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    client = Client(HTTP_X_FORWARDED_FOR="'; drop table users; --")
    assert sign_in(client, "wrong").status_code == 200
    assert sign_in(client, "pw-alice-123").status_code == 302


def test_a_session_signed_in_without_an_address_is_not_a_500(user):
    client = Client(REMOTE_ADDR="")
    client.force_login(user)
    assert client.get("/accounts/login/").status_code == 200
