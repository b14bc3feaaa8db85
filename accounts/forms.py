"""The API token form of the account page; the rules themselves are api_token_create's."""

from django import forms

from accounts.models import TOKEN_NAME_MAX_CHARS
from accounts.services import TOKEN_EXPIRY_MAX_DAYS


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        max_length=TOKEN_NAME_MAX_CHARS, help_text="What the token is for, e.g. “laptop CLI”."
    )
    expires_in_days = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=TOKEN_EXPIRY_MAX_DAYS,
        label="Expires in (days)",
        help_text="Empty: never expires.",
    )
    read_only = forms.BooleanField(
        required=False, label="Read-only", help_text="Can query, cannot start research or change anything."
    )
