import pytest

from corpora.services import passage_embed_pending
from llms.breaker import CircuitBreaker, breakers
from research.engine.researcher import researcher_agent
from research.engine.run import report_run
from research.models import ResearchReport
from tests.embedding_server import EmbeddingServer
from tests.research.scripts import call, scripted


@pytest.fixture(autouse=True)
def _fresh_breakers():
    breakers.clear()
    yield
    breakers.clear()


def test_five_failures_within_the_window_open_the_circuit_for_a_while():
    breaker = CircuitBreaker(failures=5, window=60, cooldown=60)
    for second in range(4):
        breaker.record_failure(now=100 + second)
    assert breaker.allow(now=104)
    breaker.record_failure(now=104)
    assert not breaker.allow(now=105)
    assert not breaker.allow(now=163)
    assert breaker.allow(now=164.5)


def test_failures_spread_beyond_the_window_do_not_open_it():
    breaker = CircuitBreaker(failures=5, window=60, cooldown=60)
    for minute in range(5):
        breaker.record_failure(now=100 + 61 * minute)
    assert breaker.allow(now=400)


def test_a_dead_embedding_endpoint_opens_the_circuit_and_the_model_is_told(user, corpus, samples, settings):
    from research.services import report_start

    seen = {}
    attempts = []

    with EmbeddingServer() as server:

        def dense_search_again_and_again(returns):
            seen.update(returns)
            attempts.append(len(server.requests))  # the endpoint's requests before this step
            index = len(returns)
            if index < 7:
                return [call("search_passages", f"s{index}", query="liability", mode="dense")]
            return [call("finish_direction", "done", follow_ups=[])]

        settings.EMBEDDING_BACKEND = "openai"
        settings.EMBEDDING_URL = server.url
        assert passage_embed_pending(corpus=corpus) > 0  # the passages have vectors
        server.fail_with = 503  # then the endpoint goes down: query embeddings fail
        report = report_start(user=user, corpus=corpus, prompt="liability")
        with researcher_agent.override(model=scripted(dense_search_again_and_again)):
            report_run(report_id=report.pk)

    outcomes = [seen[f"s{i}"] for i in range(7)]
    assert all(o.startswith("error[embedding_unavailable]") for o in outcomes[:5])
    assert all(o.startswith("error[circuit_open]") for o in outcomes[5:])
    # the endpoint was left alone once the circuit opened: no request during the last two searches
    assert attempts[4] < attempts[5] == attempts[6] == attempts[7]
    log = [
        e for e in ResearchReport.objects.get(pk=report.pk).tool_call_log if "mode='dense'" in e["arguments"]
    ]
    assert [e["outcome"] for e in log[-2:]] == ["error: circuit_open", "error: circuit_open"]
