"""Test data built through the services, so tests see what users get."""

import uuid

from corpora.services import document_ingest
from research.models import ResearchReport

# What `manage.py search --json` promises for each hit.
SEARCH_HIT_FIELDS = {
    "passage_id",
    "document_id",
    "document_title",
    "source_name",
    "page",
    "start",
    "end",
    "text",
    "score",
}

ACME_SUPPLY = """# Supply Agreement

This Supply Agreement is made between Acme Corporation ("Supplier") and Globex Inc. ("Buyer").

## Limitation of Liability

In no event shall either party be liable for any indirect, incidental or consequential damages.
The total liability of the Supplier under this Agreement shall not exceed the fees paid by the
Buyer in the twelve months preceding the claim.

## Governing Law

This Agreement shall be governed by and construed in accordance with the laws of the State of
Delaware, without regard to its conflict of laws principles.

## Insurance

The Supplier shall maintain commercial general liability insurance with limits of not less than
two million dollars per occurrence, and shall name the Buyer as an additional insured.
"""

INITECH_LICENSE = """SOFTWARE LICENSE AGREEMENT

1. GRANT OF LICENSE

Initech grants the Licensee a non-exclusive, non-transferable licence to use the Software
for internal business purposes only. The Licensee shall not sublicense the Software.

2. TERMINATION

Either party may terminate this Agreement for convenience upon ninety days written notice.
Upon termination the Licensee shall destroy all copies of the Software.

3. NON-COMPETE

During the term and for two years thereafter, the Licensee shall not develop a competing
product that replicates the functionality of the Software.
"""


def ingest_text(corpus, filename: str, text: str, **kwargs):
    return document_ingest(corpus=corpus, content=text.encode("utf-8"), filename=filename, **kwargs)


def ingest_agreements(corpus, count: int, *, insured: int) -> list[int]:
    """`count` short agreements, the first `insured` of which require insurance."""
    ids = []
    for i in range(count):
        lines = [f"Agreement {i} between Party A{i} and Party B{i}.", ""]
        if i < insured:
            lines.append(
                f"The Supplier shall maintain commercial general liability insurance of at least {i + 1} "
                "million dollars throughout the term of this agreement."
            )
        else:
            lines.append(
                f"Payment of invoices is due within {30 + i} days of the invoice date by wire transfer."
            )
        lines += ["", f"This agreement is governed by the laws of state number {i} and its courts."]
        ids.append(ingest_text(corpus, f"agreement-{i:02d}.txt", "\n".join(lines) + "\n").document.pk)
    return ids


def ingest_samples(corpus, **kwargs):
    return [
        ingest_text(corpus, "acme-supply.md", ACME_SUPPLY, **kwargs),
        ingest_text(corpus, "initech-license.txt", INITECH_LICENSE, **kwargs),
    ]


def refuse_second_passage_inserts(message: str) -> None:
    """Make the database itself fail a document's second passage insert with `message`, as a
    full disk or a lost connection would: real failures mid-write, not a patched service."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "CREATE TRIGGER refuse_second_passage BEFORE INSERT ON corpora_passage "
                f"WHEN new.ordinal = 1 BEGIN SELECT RAISE(ABORT, '{message}'); END"
            )
            return
        cursor.execute(
            "CREATE FUNCTION refuse_second_passage() RETURNS trigger AS $$ BEGIN "
            f"IF NEW.ordinal = 1 THEN RAISE EXCEPTION '{message}'; END IF; RETURN NEW; END $$ "
            "LANGUAGE plpgsql"
        )
        cursor.execute(
            "CREATE TRIGGER refuse_second_passage BEFORE INSERT ON corpora_passage "
            "FOR EACH ROW EXECUTE FUNCTION refuse_second_passage()"
        )


def queued_report(user, corpus, title: str = "Waiting for a worker", **fields) -> ResearchReport:
    """A report as a deployment with a broker has it before a worker takes it: QUEUED, budgets set.
    Made with the ORM rather than report_start: with no broker, report_start hands the run to this
    process's thread pool, which takes it within milliseconds, so a report that must stay QUEUED
    for the whole test cannot deterministically come from there."""
    return ResearchReport.objects.create(
        corpus=corpus,
        creator=user,
        title=title,
        slug=f"waiting-{uuid.uuid4().hex[:8]}",
        prompt=fields.pop("prompt", title),
        max_steps=60,
        max_tool_calls=120,
        token_limit=100_000,
        time_limit_seconds=300,
        **fields,
    )


def signed_in(user):
    """A test client signed in as `user` (Django's session, as the pages use)."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client
