from django.apps import AppConfig


class LlmsConfig(AppConfig):
    name = "llms"
