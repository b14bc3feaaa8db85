from django.apps import AppConfig


class CorporaConfig(AppConfig):
    name = "corpora"

    def ready(self) -> None:
        from corpora import checks  # noqa: F401 - registers the system checks
