"""The document view: a document's text as anchored passages, the passage opened from a report
highlighted with its quote marked; readable by whoever may read the corpus, a 404 for others;
the text escaped and hostile offsets ignored."""

import pytest
from django.test import Client
from django.urls import reverse

from corpora.models import Passage
from corpora.services import corpus_create, corpus_share
from tests.factories import ingest_samples, ingest_text, signed_in


@pytest.fixture
def corpus(user):
    corpus = corpus_create(creator=user, name="Contracts")
    ingest_samples(corpus)
    return corpus


def _url(target: Passage, **params: str) -> str:
    url = reverse("corpora:document", args=[target.corpus_id, target.document_id])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


def test_the_document_shows_every_passage_in_order_with_its_anchor(user, corpus):
    passages = list(Passage.objects.filter(corpus=corpus).order_by("document_id", "ordinal"))
    document_passages = [p for p in passages if p.document_id == passages[0].document_id]
    page = signed_in(user).get(_url(passages[0])).content.decode()
    anchors = [page.index(f'id="passage-{p.pk}"') for p in document_passages]
    assert anchors == sorted(anchors)
    assert 'class="passage focus"' not in page and "<mark>" not in page
    corpus_page = signed_in(user).get(reverse("corpora:detail", args=[corpus.pk])).content.decode()
    assert reverse("corpora:document", args=[corpus.pk, passages[0].document_id]) in corpus_page


def test_opened_at_a_passage_it_is_highlighted_and_its_quote_marked(user, corpus):
    passage = Passage.objects.filter(corpus=corpus, is_heading=False).order_by("pk").first()
    start = passage.start + passage.text.index(" ") + 1
    end = start + 12
    page = signed_in(user).get(_url(passage, passage=str(passage.pk), mark=f"{start}-{end}")).content.decode()
    assert page.count('aria-current="true"') == 1
    focused = page[page.index(f'id="passage-{passage.pk}"') :]
    assert (
        f"<mark>{passage.text[start - passage.start : end - passage.start]}</mark>"
        in focused.split("</section>")[0]
    )


@pytest.mark.parametrize(
    "mark", ["9-3", "0-99999999", "abc", "1-", "-5", "1-2-3", "\uff11-\uff12", "9" * 30 + "-" + "9" * 31]
)
def test_hostile_or_outside_offsets_mark_nothing(user, corpus, mark):
    passage = Passage.objects.filter(corpus=corpus).order_by("pk").first()
    response = signed_in(user).get(_url(passage, passage=str(passage.pk), mark=mark))
    assert response.status_code == 200
    assert "<mark>" not in response.content.decode()


@pytest.mark.parametrize("focus", ["x", "-1", "9" * 40, "\uff11"])
def test_a_bad_passage_parameter_focuses_nothing(user, corpus, focus):
    passage = Passage.objects.filter(corpus=corpus).order_by("pk").first()
    response = signed_in(user).get(_url(passage, passage=focus))
    assert response.status_code == 200 and 'aria-current="true"' not in response.content.decode()


def test_a_shared_user_reads_it_and_others_get_404(user, other_user, django_user_model, corpus):
    passage = Passage.objects.filter(corpus=corpus).order_by("pk").first()
    assert signed_in(other_user).get(_url(passage)).status_code == 404
    corpus_share(user=user, corpus=corpus, username=other_user.username)
    assert signed_in(other_user).get(_url(passage)).status_code == 200


def test_a_document_is_found_only_under_its_own_corpus(user, corpus):
    passage = Passage.objects.filter(corpus=corpus).order_by("pk").first()
    mine_too = corpus_create(creator=user, name="Other")
    url = reverse("corpora:document", args=[mine_too.pk, passage.document_id])
    assert signed_in(user).get(url).status_code == 404


def test_anonymous_users_are_sent_to_sign_in(corpus):
    passage = Passage.objects.filter(corpus=corpus).order_by("pk").first()
    response = Client().get(_url(passage))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_text_is_escaped(user):
    corpus = corpus_create(creator=user, name="Hostile")
    result = ingest_text(
        corpus,
        "<img src=x onerror=alert(1)>.md",
        '# <script>alert(1)</script>\n\nA link: <a href="javascript:alert(1)">click</a> and more words here.',
    )
    passage = Passage.objects.filter(document=result.document).order_by("ordinal").last()
    page = (
        signed_in(user)
        .get(_url(passage, passage=str(passage.pk), mark=f"{passage.start}-{passage.end}"))
        .content.decode()
    )
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert "<img src=x" not in page and '<a href="javascript:' not in page


def test_a_passage_opens_by_its_id_alone_for_its_readers_only(user, other_user, corpus):
    passage = Passage.objects.filter(corpus=corpus, is_heading=False).order_by("pk").first()
    address = reverse("corpora:passage", args=[passage.pk])
    # its reader lands on its document's view at the passage, highlighted
    response = signed_in(user).get(address, follow=True)
    assert response.redirect_chain[-1][0] == _url(passage, passage=str(passage.pk)) + f"#passage-{passage.pk}"
    assert 'class="passage focus"' in response.content.decode()
    # anyone else, and a passage that does not exist, get 404
    assert signed_in(other_user).get(address).status_code == 404
    assert signed_in(user).get(reverse("corpora:passage", args=[987654])).status_code == 404
