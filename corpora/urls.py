from django.urls import path

from corpora.pages import corpus_detail, corpus_new, corpus_upload, document_detail, document_remove

app_name = "corpora"
urlpatterns = [
    path("new/", corpus_new, name="new"),
    path("<int:corpus_id>/", corpus_detail, name="detail"),
    path("<int:corpus_id>/upload/", corpus_upload, name="upload"),
    path("<int:corpus_id>/documents/<int:document_id>/", document_detail, name="document"),
    path("<int:corpus_id>/documents/<int:document_id>/delete/", document_remove, name="document-delete"),
]
