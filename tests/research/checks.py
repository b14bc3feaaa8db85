"""The closed-citation-graph invariant, checked on every finalized report a test produces."""

import re

from corpora.models import Document, Passage
from research.models import ResearchReport


def assert_closed_citation_graph(report: ResearchReport) -> None:
    """Every footnote is a passage this run retrieved, every quote is verbatim in its passage
    and at its offsets in the document, footnotes and Sources entries match one to one, and the
    content holds no raw <cite."""
    retrieved = set(report.retrieved_passage_ids)
    assert "<cite" not in report.content.lower(), report.content
    body, _, sources = report.content.rpartition("\n## Sources\n")
    used = {int(n) for n in re.findall(r"\[\^(\d+)\]", body)}
    defined = [int(n) for n in re.findall(r"^\[\^(\d+)\]:", sources, flags=re.MULTILINE)]
    assert sorted(defined) == sorted(set(defined)) == sorted(used), report.content
    assert [c["footnote"] for c in report.citations] == list(range(1, len(report.citations) + 1))
    cited = set(report.cited_passages.values_list("pk", flat=True))
    assert cited == {c["passage_id"] for c in report.citations}
    for citation in report.citations:
        assert citation["passage_id"] in retrieved
        passage = Passage.objects.get(pk=citation["passage_id"], corpus_id=report.corpus_id)
        assert citation["quote"] in passage.text
        document = Document.objects.get(pk=citation["document_id"])
        assert document.text[citation["start"] : citation["end"]] == citation["quote"]
    for finding in report.findings:
        assert finding["passage_id"] in retrieved
        document = Document.objects.get(pk=finding["document_id"])
        assert document.text[finding["start"] : finding["end"]] == finding["quote"]


def assert_every_finalized_report_is_closed() -> int:
    reports = ResearchReport.objects.filter(finalized_at__isnull=False)
    for report in reports:
        assert_closed_citation_graph(report)
    return len(reports)
