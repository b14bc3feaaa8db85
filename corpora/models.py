"""Corpus, Document and Passage: the citable unit of everything Deepcite retrieves."""

from django.conf import settings
from django.db import models

from corpora.constants import CORPUS_NAME_MAX_LENGTH, DOCUMENT_TITLE_MAX_LENGTH


class Corpus(models.Model):
    name = models.CharField(max_length=CORPUS_NAME_MAX_LENGTH)
    description = models.TextField(blank=True)
    creator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="corpora")
    # Bumped by every service that adds, removes or embeds passages; in-memory dense indexes
    # compare it to know they are stale.
    index_version = models.PositiveBigIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)
    modified = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "corpora"
        constraints = [
            models.UniqueConstraint(fields=["creator", "name"], name="corpus_unique_name_per_creator"),
        ]

    def __str__(self) -> str:
        return self.name


class FileType(models.TextChoices):
    TXT = "txt", "Plain text"
    MD = "md", "Markdown"
    HTML = "html", "HTML"
    PDF = "pdf", "PDF"
    DOCX = "docx", "Word (docx)"


class Document(models.Model):
    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(max_length=DOCUMENT_TITLE_MAX_LENGTH)
    source_name = models.CharField(max_length=DOCUMENT_TITLE_MAX_LENGTH)
    file_type = models.CharField(max_length=8, choices=FileType.choices)
    text = models.TextField()
    page_count = models.PositiveIntegerField(null=True, blank=True)
    content_hash = models.CharField(max_length=64)
    byte_size = models.PositiveBigIntegerField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["corpus", "content_hash"], name="document_unique_content_per_corpus"
            ),
        ]
        indexes = [models.Index(fields=["corpus", "title"])]

    def __str__(self) -> str:
        return self.title


class Passage(models.Model):
    """A span of a document's text: `document.text[start:end] == text` always holds."""

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="passages")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="passages")
    ordinal = models.PositiveIntegerField()
    text = models.TextField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    page = models.PositiveIntegerField(null=True, blank=True)
    heading_path = models.JSONField(default=list, blank=True)
    is_heading = models.BooleanField(default=False)
    word_count = models.PositiveIntegerField()
    # Unit-length float32 vector; empty until the background embedding task reaches it.
    embedding = models.BinaryField(null=True, blank=True, editable=False)
    embedding_model = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["document_id", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["document", "ordinal"], name="passage_unique_ordinal"),
            models.CheckConstraint(
                condition=models.Q(end__gt=models.F("start")), name="passage_nonempty_span"
            ),
        ]
        indexes = [models.Index(fields=["corpus", "embedding_model"])]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.ordinal}"


class PassageVector(models.Model):
    """pgvector's copy of a passage's embedding (corpora/retrieval/pgvector.py), in a table that
    exists only where PostgreSQL has the extension: migration 0003 creates it in SQL with its
    `embedding halfvec` column, which only that module reads and writes. Declared so that Django
    knows the table (a flush truncates it with corpora_passage, which it references); the
    database's own foreign key cascades a passage's deletion to it (DO_NOTHING here: the ORM
    never looks for a table SQLite does not have)."""

    passage = models.OneToOneField(
        Passage, primary_key=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    corpus_id = models.BigIntegerField()
    document_id = models.BigIntegerField()
    model = models.CharField(max_length=200)

    def __str__(self) -> str:
        return f"vector of passage {self.passage_id}"
