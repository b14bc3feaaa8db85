from django.urls import path

from research.views import report_detail

app_name = "research"
urlpatterns = [
    path("<slug:slug>/", report_detail, name="report-detail"),
]
