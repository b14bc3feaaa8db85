from django.urls import path

from corpora.pages import (
    corpus_delete_page,
    corpus_detail,
    corpus_new,
    corpus_rename_page,
    corpus_share_page,
    corpus_upload,
    document_detail,
    document_remove,
    passage_open,
)

app_name = "corpora"
urlpatterns = [
    path("new/", corpus_new, name="new"),
    path("<int:corpus_id>/", corpus_detail, name="detail"),
    path("<int:corpus_id>/upload/", corpus_upload, name="upload"),
    path("<int:corpus_id>/rename/", corpus_rename_page, name="rename"),
    path("<int:corpus_id>/share/", corpus_share_page, name="share"),
    path("<int:corpus_id>/delete/", corpus_delete_page, name="delete"),
    path("<int:corpus_id>/documents/<int:document_id>/", document_detail, name="document"),
    path("<int:corpus_id>/documents/<int:document_id>/delete/", document_remove, name="document-delete"),
    path("passages/<int:passage_id>/", passage_open, name="passage"),
]
