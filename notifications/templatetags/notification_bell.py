"""`{% notification_bell %}`: the nav's bell with the signed-in user's unread count (one COUNT
query, only on pages that show the nav)."""

from django import template

from notifications.selectors import notification_unread_count

register = template.Library()


@register.inclusion_tag("notifications/bell.html", takes_context=True)
def notification_bell(context: template.Context) -> dict[str, int]:
    # The user the nav itself tests (the auth context processor's), so the two never disagree.
    return {"unread": notification_unread_count(user=context["user"])}
