import itertools
from datetime import timedelta

import pytest
from django.db import connection

from research.exceptions import ReportAlreadyActive
from research.models import ResearchReport
from tasks.research import in_process_pool
from tests.research.races import starts_at_once

THREADS = 20


@pytest.mark.django_db(transaction=True)
def test_twenty_simultaneous_starts_never_make_two_active_reports(user, corpus):
    if connection.vendor != "postgresql":
        pytest.skip("the race is checked on PostgreSQL, where starts really run in parallel")
    outcomes = starts_at_once(
        [{"user": user, "corpus": corpus, "prompt": f"race {i}"} for i in range(THREADS)],
        {ReportAlreadyActive: "already_active"},
    )
    assert in_process_pool.wait(timeout=60)  # the one queued run, before the database is flushed

    # The starts queue on the user's row (the active-run cap); one that gets it after the
    # winner's run has already ended (it runs in this process, in well under a second) may start
    # a run of its own. What must never happen is two runs active at once: each created report
    # was created once the one before it had ended. (`created` is stamped before the INSERT,
    # which may then wait on the ending run's commit: a few milliseconds of slack.)
    assert set(outcomes) == {"created", "already_active"}, outcomes
    reports = list(ResearchReport.objects.filter(creator=user, corpus=corpus).order_by("created"))
    assert len(reports) == outcomes.count("created")
    for earlier, later in itertools.pairwise(reports):
        assert earlier.completed_at is not None
        assert later.created >= earlier.completed_at - timedelta(seconds=1)
