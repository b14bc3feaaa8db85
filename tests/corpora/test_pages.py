"""The corpus pages as a signed-in user uses them: create a corpus from home, upload files
through the form (per-file results), search, delete a document; shared users read and search
but cannot manage; others get 404; CSRF and escaping."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from corpora.models import Corpus, Document
from corpora.selectors import corpus_shared_with
from corpora.services import corpus_create, corpus_share
from research.models import ReportStatus, ResearchReport
from tests.documents import pdf_bytes
from tests.factories import ACME_SUPPLY, INITECH_LICENSE, ingest_samples, queued_report, signed_in


@pytest.fixture
def browser(user):
    return signed_in(user)


def test_a_corpus_created_on_home_opens_its_page(browser, user):
    response = browser.post(reverse("corpora:new"), {"name": "  Supplier   contracts "}, follow=True)
    corpus = Corpus.objects.get(creator=user)
    assert corpus.name == "Supplier contracts"
    assert response.redirect_chain[-1][0] == f"/corpora/{corpus.pk}/"
    assert "Created “Supplier contracts”" in response.content.decode()
    assert f'href="/corpora/{corpus.pk}/"' in browser.get("/").content.decode()


def test_a_bad_or_taken_name_is_said_on_home(browser, user):
    corpus_create(creator=user, name="Taken")
    page = browser.post(reverse("corpora:new"), {"name": "Taken"}, follow=True).content.decode()
    assert "corpus_name_taken" in page
    page = browser.post(reverse("corpora:new"), {"name": "   "}, follow=True).content.decode()
    assert "corpus_name_invalid" in page
    assert Corpus.objects.count() == 1


def test_the_file_picker_offers_every_kind_ingestion_reads(browser, user):
    corpus = corpus_create(creator=user, name="Contracts")
    page = browser.get(reverse("corpora:detail", args=[corpus.pk])).content.decode()
    accept = re.search(r'<input type="file"[^>]* accept="([^"]*)"', page).group(1)
    assert sorted(accept.split(",")) == [
        ".docx",
        ".htm",
        ".html",
        ".markdown",
        ".md",
        ".pdf",
        ".text",
        ".txt",
    ]


def test_uploading_through_the_form_ingests_each_file_with_its_result(browser, user):
    corpus = corpus_create(creator=user, name="Contracts")
    files = [
        SimpleUploadedFile("acme-supply.md", ACME_SUPPLY.encode()),
        SimpleUploadedFile(
            "licence.pdf", pdf_bytes([["The licensee shall pay the fee within thirty days."]])
        ),
        SimpleUploadedFile("tool.exe", b"MZ\x90\x00"),
    ]
    response = browser.post(reverse("corpora:upload", args=[corpus.pk]), {"files": files}, follow=True)
    page = response.content.decode()
    # post/redirect/get: the results show on the corpus page, so a reload posts nothing again
    assert response.redirect_chain == [(reverse("corpora:detail", args=[corpus.pk]), 302)]
    assert '<tr class="ingested"><td>acme-supply.md</td>' in page
    assert '<tr class="ingested"><td>licence.pdf</td>' in page
    assert '<tr class="failed"><td>tool.exe</td>' in page
    assert set(Document.objects.filter(corpus=corpus).values_list("source_name", flat=True)) == {
        "acme-supply.md",
        "licence.pdf",
    }
    # the documents table lists them, embedding still to come (no worker ran it here)
    assert page.count(">Delete</button>") == 2 and page.count("<td>pending</td>") == 2
    # the results are shown once: the page reloaded lists the documents, not the upload again
    reloaded = browser.get(reverse("corpora:detail", args=[corpus.pk])).content.decode()
    assert reloaded.count(">Delete</button>") == 2 and 'class="list uploads"' not in reloaded
    again = browser.post(
        reverse("corpora:upload", args=[corpus.pk]),
        {"files": [SimpleUploadedFile("copy.md", ACME_SUPPLY.encode())]},
        follow=True,
    )
    assert '<tr class="duplicate"><td>copy.md</td>' in again.content.decode()
    assert Document.objects.filter(corpus=corpus).count() == 2


def test_an_upload_over_the_limit_is_refused_from_its_declared_size(browser, user, settings):
    settings.UPLOAD_MAX_BYTES = 1_000
    corpus = corpus_create(creator=user, name="Contracts")
    response = browser.post(
        reverse("corpora:upload", args=[corpus.pk]), {"files": [SimpleUploadedFile("big.md", b"x" * 5_000)]}
    )
    assert response.status_code == 413 and "request_too_large" in response.content.decode()
    assert not Document.objects.exists()


def test_more_files_than_a_request_may_carry_are_refused_with_a_page_saying_so(browser, user, settings):
    # given a form upload of one file more than a request may carry
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 3
    corpus = corpus_create(creator=user, name="Contracts")
    files = [SimpleUploadedFile(f"f{i}.md", b"# Terms\n\nNotice is in writing.") for i in range(4)]
    # when
    response = browser.post(reverse("corpora:upload", args=[corpus.pk]), {"files": files})
    # then a page names the limit and its code, and nothing is ingested
    page = response.content.decode()
    assert response.status_code == 400
    assert "An upload is at most 3 files at a time. (too_many_files)" in page
    assert not Document.objects.exists()


def test_an_empty_upload_is_said(browser, user):
    corpus = corpus_create(creator=user, name="Contracts")
    response = browser.post(reverse("corpora:upload", args=[corpus.pk]), {})
    assert response.status_code == 400 and "no_files" in response.content.decode()


def test_search_shows_passages_with_their_document(browser, user):
    corpus = corpus_create(creator=user, name="Contracts")
    ingest_samples(corpus)
    page = browser.get(reverse("corpora:detail", args=[corpus.pk]), {"q": "liability cap"}).content.decode()
    assert '<ol class="hits">' in page and "liability" in page.lower()
    empty = browser.get(reverse("corpora:detail", args=[corpus.pk]), {"q": "zyxwvut"}).content.decode()
    assert "No passage matches “zyxwvut”." in empty


def test_deleting_a_document_removes_it(browser, user):
    corpus = corpus_create(creator=user, name="Contracts")
    acme, initech = ingest_samples(corpus)
    response = browser.post(
        reverse("corpora:document-delete", args=[corpus.pk, acme.document.pk]), follow=True
    )
    assert "Deleted “" in response.content.decode()
    assert list(Document.objects.filter(corpus=corpus)) == [initech.document]


def test_a_shared_user_reads_and_searches_but_cannot_manage(user, other_user):
    corpus = corpus_create(creator=user, name="Contracts")
    acme, _ = ingest_samples(corpus)
    corpus_share(user=user, corpus=corpus, username=other_user.username)
    bob = signed_in(other_user)
    page = bob.get(reverse("corpora:detail", args=[corpus.pk]), {"q": "insurance"}).content.decode()
    assert "Shared with you by alice" in page and '<ol class="hits">' in page
    assert "Add documents" not in page and ">Delete<" not in page
    files = {"files": [SimpleUploadedFile("x.md", INITECH_LICENSE.encode() + b" extra")]}
    assert bob.post(reverse("corpora:upload", args=[corpus.pk]), files).status_code == 403
    assert bob.post(reverse("corpora:document-delete", args=[corpus.pk, acme.document.pk])).status_code == 403
    assert Document.objects.filter(corpus=corpus).count() == 2


def test_another_users_corpus_is_not_found(browser, other_user):
    theirs = corpus_create(creator=other_user, name="Bob's")
    ingest_samples(theirs)
    document = Document.objects.filter(corpus=theirs).first()
    assert browser.get(reverse("corpora:detail", args=[theirs.pk])).status_code == 404
    files = {"files": [SimpleUploadedFile("x.md", b"# Hello\n\nSome text to store here.")]}
    assert browser.post(reverse("corpora:upload", args=[theirs.pk]), files).status_code == 404
    assert browser.post(reverse("corpora:document-delete", args=[theirs.pk, document.pk])).status_code == 404
    assert Document.objects.filter(corpus=theirs).count() == 2


def test_forms_need_the_csrf_token(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(reverse("corpora:new"), {"name": "Forged"}).status_code == 403
    corpus = corpus_create(creator=user, name="Contracts")
    files = {"files": [SimpleUploadedFile("x.md", b"# Hello\n\nSome text to store here.")]}
    assert client.post(reverse("corpora:upload", args=[corpus.pk]), files).status_code == 403
    assert Corpus.objects.count() == 1 and not Document.objects.exists()


def test_names_and_titles_are_escaped(browser, user):
    corpus = corpus_create(creator=user, name="<script>alert(1)</script>")
    browser.post(
        reverse("corpora:upload", args=[corpus.pk]),
        {
            "files": [
                SimpleUploadedFile("<img src=x onerror=alert(1)>.md", b"# <b>Title</b>\n\nBody text here.")
            ]
        },
    )
    page = browser.get(reverse("corpora:detail", args=[corpus.pk])).content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert "<img src=x" not in page and "<b>Title</b>" not in page


def test_the_creator_renames_shares_and_unshares_from_the_page(browser, user, other_user):
    corpus = corpus_create(creator=user, name="Contracts")
    corpus_create(creator=user, name="Taken")
    page = browser.post(
        reverse("corpora:rename", args=[corpus.pk]), {"name": " Supplier  contracts "}, follow=True
    )
    assert "Renamed to “Supplier contracts”." in page.content.decode()
    taken = browser.post(reverse("corpora:rename", args=[corpus.pk]), {"name": "Taken"}, follow=True)
    assert "corpus_name_taken" in taken.content.decode()
    corpus.refresh_from_db()
    assert corpus.name == "Supplier contracts"

    shared = browser.post(
        reverse("corpora:share", args=[corpus.pk]), {"username": "bob", "action": "share"}, follow=True
    )
    assert "Shared with bob." in shared.content.decode() and "Stop sharing" in shared.content.decode()
    assert signed_in(other_user).get(reverse("corpora:detail", args=[corpus.pk])).status_code == 200
    for username, code in (("nobody", "user_not_found"), ("alice", "cannot_share_with_self")):
        refused = browser.post(
            reverse("corpora:share", args=[corpus.pk]), {"username": username}, follow=True
        )
        assert code in refused.content.decode()
    unshared = browser.post(
        reverse("corpora:share", args=[corpus.pk]), {"username": "bob", "action": "unshare"}, follow=True
    )
    assert "No longer shared with bob." in unshared.content.decode()
    assert signed_in(other_user).get(reverse("corpora:detail", args=[corpus.pk])).status_code == 404


def test_deleting_a_corpus_needs_its_name_and_says_what_went(browser, user):
    corpus = corpus_create(creator=user, name="Contracts")
    ingest_samples(corpus)
    wrong = browser.post(reverse("corpora:delete", args=[corpus.pk]), {"confirm": "Contract"}, follow=True)
    assert "confirmation_mismatch" in wrong.content.decode()
    assert Corpus.objects.filter(pk=corpus.pk).exists()
    response = browser.post(
        reverse("corpora:delete", args=[corpus.pk]), {"confirm": "Contracts"}, follow=True
    )
    assert response.redirect_chain[-1][0] == "/"
    assert "Deleted “Contracts” with 2 documents." in response.content.decode()
    assert not Corpus.objects.filter(pk=corpus.pk).exists() and not Document.objects.exists()


def test_a_corpus_with_reports_is_kept_unless_they_go_too(browser, user):
    corpus = corpus_create(creator=user, name="Contracts")
    ingest_samples(corpus)
    queued_report(user, corpus, "Liability", status=ReportStatus.COMPLETED)
    kept = browser.post(reverse("corpora:delete", args=[corpus.pk]), {"confirm": "Contracts"}, follow=True)
    page = kept.content.decode()
    assert "corpus_has_reports" in page and "deleteReports" not in page
    assert "tick “Also delete the research reports on it”" in page
    assert Corpus.objects.filter(pk=corpus.pk).exists()
    gone = browser.post(
        reverse("corpora:delete", args=[corpus.pk]),
        {"confirm": "Contracts", "delete_reports": "on"},
        follow=True,
    )
    assert "with 2 documents and 1 report." in gone.content.decode()
    assert not ResearchReport.objects.exists()


def test_only_the_creator_manages(user, other_user):
    corpus = corpus_create(creator=user, name="Contracts")
    bob = signed_in(other_user)
    for name, data in (
        ("rename", {"name": "Mine"}),
        ("share", {"username": "bob"}),
        ("delete", {"confirm": "Contracts"}),
    ):
        assert bob.post(reverse(f"corpora:{name}", args=[corpus.pk]), data).status_code == 404
    corpus_share(user=user, corpus=corpus, username=other_user.username)
    for name, data in (
        ("rename", {"name": "Mine"}),
        ("share", {"username": "bob", "action": "unshare"}),
        ("delete", {"confirm": "Contracts"}),
    ):
        assert bob.post(reverse(f"corpora:{name}", args=[corpus.pk]), data).status_code == 403
    corpus.refresh_from_db()
    assert corpus.name == "Contracts" and corpus_shared_with(corpus=corpus) == ["bob"]
    page = bob.get(reverse("corpora:detail", args=[corpus.pk])).content.decode()
    assert "Delete this corpus" not in page and "Share with" not in page


def test_a_reader_refused_a_creators_action_gets_a_page_saying_why_and_no_traceback_is_logged(
    user, other_user, caplog
):
    # given a corpus shared with bob
    corpus = corpus_create(creator=user, name="Contracts")
    corpus_share(user=user, corpus=corpus, username=other_user.username)
    # when he tries to rename it
    with caplog.at_level("WARNING", logger="django.request"):
        response = signed_in(other_user).post(reverse("corpora:rename", args=[corpus.pk]), {"name": "Mine"})
    # then the site's page says why, with a code, not a bare "403 Forbidden"
    page = response.content.decode()
    assert response.status_code == 403
    assert "<h1>Not allowed</h1>" in page and "/static/" in page
    assert "Only the corpus&#x27;s creator can do that (permission_denied)" in page
    # and the refusal is logged as a line, without a traceback (it is no error of the site's)
    [record] = [r for r in caplog.records if r.name == "django.request"]
    assert record.getMessage().startswith("Forbidden (Permission denied)") and record.exc_info is None


@pytest.mark.parametrize("name", ["research:report-new", "corpora:upload"])
def test_signing_in_again_to_a_forms_address_opens_the_corpus_page(user, corpus, name):
    # given a form posted after the session ended, sent to sign in with it as `next`
    user.set_password("pw-for-the-test-123")
    user.save()
    address = reverse(name, args=[corpus.pk])
    anonymous = Client()
    assert anonymous.post(address)["Location"] == f"{reverse('login')}?next={address}"
    # when the user signs in, and is sent back to it (a GET)
    response = anonymous.post(
        f"{reverse('login')}?next={address}",
        {"username": user.username, "password": "pw-for-the-test-123", "next": address},
        follow=True,
    )
    # then the corpus page opens, not an empty 405
    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == reverse("corpora:detail", args=[corpus.pk])
    assert f'action="/corpora/{corpus.pk}/upload/"' in response.content.decode()
