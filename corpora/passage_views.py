"""How a retrieved passage is shown to a model: the fields every agent's search tools return."""

from typing import Any

from corpora.models import Passage


def passage_view(passage: Passage) -> dict[str, Any]:
    return {
        "passage_id": passage.pk,
        "document_id": passage.document_id,
        "document_title": passage.document.title,
        "page": passage.page,
        "heading": " > ".join(passage.heading_path or []),
        "is_heading": passage.is_heading,
        "text": passage.text,
    }
