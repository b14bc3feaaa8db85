import pytest
from pydantic_ai import models as pydantic_ai_models

from research.engine.run import report_run
from research.models import ReportStatus, ResearchReport
from tests.chat_server import ChatServer, tool_results

LIABILITY_SENTENCE = (
    "In no event shall either party be liable for any indirect, incidental or consequential damages."
)


@pytest.fixture
def allow_local_model(monkeypatch):
    # The model is a local HTTP server started by the test, not a provider on the internet.
    monkeypatch.setattr(pydantic_ai_models, "ALLOW_MODEL_REQUESTS", True)


def _researcher(body):
    """A model that searches, records one finding from what it read, and finalizes."""
    results = tool_results(body)
    if not results:
        return {"tool_calls": [("search_passages", {"query": "consequential damages", "mode": "lexical"})]}
    if len(results) == 1:
        hit = next(r for r in results[0]["results"] if "consequential" in r["text"])
        finding = {
            "claim": "Consequential damages are excluded.",
            "quote": LIABILITY_SENTENCE,
            "passage_ids": [hit["passage_id"]],
        }
        return {"tool_calls": [("record_finding", finding)]}
    hit = results[0]["results"][0]["passage_id"]
    draft = f'# Liability\n\n<cite ids="{hit}">Consequential damages are excluded.</cite>'
    return {"tool_calls": [("finalize_report", {"markdown": draft})]}


def test_an_openai_compatible_server_drives_a_run_over_http(report, settings, allow_local_model):
    with ChatServer(_researcher) as server:
        settings.RESEARCH_MODEL = "openai-compatible:local-model"
        settings.LLM_BASE_URL = server.url
        settings.LLM_API_KEY = "sk-local"
        report_run(report_id=report.pk)

    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED, stored.error
    assert stored.content.startswith("# Liability\n\nConsequential damages are excluded.[^1]")
    assert stored.citations[0]["quote"] == LIABILITY_SENTENCE
    assert stored.model_usage["engine"] == "llm"
    assert stored.model_usage["model"] == "openai-compatible:local-model"
    assert stored.model_usage["requests"] == 3
    assert stored.model_usage["input_tokens"] == 300
    assert len(server.requests) == 3
    first = server.requests[0]
    assert first["path"] == "/v1/chat/completions"
    assert first["auth"] == "Bearer sk-local"
    assert first["body"]["model"] == "local-model"
    tool_names = {tool["function"]["name"] for tool in first["body"]["tools"]}
    assert tool_names == {
        "search_passages",
        "exact_search",
        "read_context",
        "list_documents",
        "record_plan",
        "record_finding",
        "finalize_report",
    }
    # the ids the run acts on are not the model's to choose
    for tool in first["body"]["tools"]:
        assert "report_id" not in tool["function"]["parameters"].get("properties", {})
        assert "corpus_id" not in tool["function"]["parameters"].get("properties", {})
    # the user's request reaches the model fenced as untrusted data
    user_text = next(m["content"] for m in first["body"]["messages"] if m["role"] == "user")
    assert "<research_prompt>What limits the liability of the supplier?" in user_text


def test_a_misconfigured_model_fails_the_run_with_a_clear_error(report, settings):
    settings.RESEARCH_MODEL = "openai-compatible:"
    report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.FAILED
    assert "needs LLM_BASE_URL and a model name" in stored.error
