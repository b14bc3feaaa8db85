from django.contrib import admin

from corpora.models import Corpus, Document


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
