from django.contrib import admin
from django.db import transaction

from corpora.models import Corpus, Document
from corpora.services import corpus_bump_index_version


@admin.register(Corpus)
class CorpusAdmin(admin.ModelAdmin):
    list_display = ("name", "creator", "index_version", "created")
    search_fields = ("name",)
    raw_id_fields = ("creator",)
    readonly_fields = ("index_version", "created", "modified")


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "corpus", "file_type", "page_count", "byte_size", "created")
    list_filter = ("file_type",)
    search_fields = ("title", "source_name")
    raw_id_fields = ("corpus",)
    # Documents are written by ingestion only: their passages' offsets depend on this text.
    readonly_fields = ("text", "content_hash", "page_count", "byte_size", "file_type", "created")

    def has_add_permission(self, request) -> bool:
        return False

    # Searches keep documents' titles in memory until the corpus's index_version moves.
    def save_model(self, request, obj, form, change) -> None:
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            corpus_bump_index_version(corpus_id=obj.corpus_id)

    def delete_model(self, request, obj) -> None:
        with transaction.atomic():
            super().delete_model(request, obj)
            corpus_bump_index_version(corpus_id=obj.corpus_id)

    def delete_queryset(self, request, queryset) -> None:
        with transaction.atomic():
            corpus_ids = set(queryset.values_list("corpus_id", flat=True))
            super().delete_queryset(request, queryset)
            for corpus_id in corpus_ids:
                corpus_bump_index_version(corpus_id=corpus_id)
