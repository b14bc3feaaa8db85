from django.urls import path

from research.views import (
    report_cancel_view,
    report_detail,
    report_export_csv,
    report_export_json,
    report_export_markdown,
    report_list_page,
    report_new,
    report_progress,
    report_resume_view,
)

app_name = "research"
urlpatterns = [
    path("", report_list_page, name="report-list"),
    path("new/<int:corpus_id>/", report_new, name="report-new"),
    path("<slug:slug>/", report_detail, name="report-detail"),
    path("<slug:slug>/export.md", report_export_markdown, name="report-export-markdown"),
    path("<slug:slug>/export.json", report_export_json, name="report-export-json"),
    path("<slug:slug>/export.csv", report_export_csv, name="report-export-csv"),
    path("<slug:slug>/progress.json", report_progress, name="report-progress"),
    path("<slug:slug>/cancel/", report_cancel_view, name="report-cancel"),
    path("<slug:slug>/resume/", report_resume_view, name="report-resume"),
]
