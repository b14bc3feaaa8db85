import pytest

from research.models import ResearchReport
from research.services import report_start
from tests.factories import ingest_samples


@pytest.fixture
def samples(corpus):
    return ingest_samples(corpus)


@pytest.fixture
def report(user, corpus, samples) -> ResearchReport:
    return report_start(
        user=user,
        corpus=corpus,
        prompt="What limits the liability of the supplier?\nWhen can the licence agreement be terminated?",
    )
