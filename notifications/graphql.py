"""GraphQL types, queries and mutations for notifications."""

import graphene
from graphene import relay
from graphene.types.generic import GenericScalar
from graphene_django import DjangoObjectType

from config.graphql.errors import BaseMutation, require_user
from config.graphql.ids import decode_ids
from config.graphql.pagination import BoundedConnectionField
from notifications.models import Notification, Webhook, WebhookFormat
from notifications.selectors import notification_list, webhook_of
from notifications.services import notifications_mark_read
from notifications.webhooks import webhook_delete, webhook_set

MARK_READ_MAX_IDS = 500


class NotificationNode(DjangoObjectType):
    kind = graphene.String(required=True)
    data = GenericScalar()
    is_read = graphene.Boolean(required=True)

    class Meta:
        model = Notification
        name = "Notification"
        interfaces = (relay.Node,)
        fields = ("created", "read_at")
        convert_choices_to_enum = False

    @classmethod
    def get_queryset(cls, queryset, info):
        return queryset.filter(pk__in=notification_list(user=info.context.user).values("pk"))

    def resolve_is_read(self, info) -> bool:
        return self.read_at is not None


class WebhookType(DjangoObjectType):
    format = graphene.String(required=True, description="json or slack")

    class Meta:
        model = Webhook
        name = "Webhook"
        fields = ("url", "enabled", "secret", "last_status", "last_error", "last_attempt_at")

    def resolve_format(self, info) -> str:
        return self.payload_format


class NotificationsQuery(graphene.ObjectType):
    notifications = BoundedConnectionField(NotificationNode, unread_only=graphene.Boolean())
    webhook = graphene.Field(WebhookType, description="Your webhook, if you configured one.")

    def resolve_webhook(root, info):
        return webhook_of(user=info.context.user)

    def resolve_notifications(root, info, unread_only=False, **kwargs):
        return notification_list(user=info.context.user, unread_only=bool(unread_only)).order_by(
            "-created", "-pk"
        )


class MarkNotificationsRead(BaseMutation):
    marked = graphene.Int(description="How many notifications became read.")

    class Arguments:
        ids = graphene.List(graphene.NonNull(graphene.ID), description="Omit to mark all read.")

    @classmethod
    def perform(cls, root, info, ids=None):
        user = require_user(info)
        pks = decode_ids(ids[:MARK_READ_MAX_IDS] if ids else ids, "Notification", field="ids")
        return {"marked": notifications_mark_read(user=user, ids=pks)}


class SetWebhook(BaseMutation):
    webhook = graphene.Field(WebhookType)

    class Arguments:
        url = graphene.String(required=True)
        format = graphene.String(default_value=WebhookFormat.JSON, description="json or slack")
        enabled = graphene.Boolean(default_value=True)

    @classmethod
    def perform(cls, root, info, url, format, enabled):
        user = require_user(info)
        return {"webhook": webhook_set(user=user, url=url, payload_format=format, enabled=enabled)}


class DeleteWebhook(BaseMutation):
    deleted = graphene.Boolean()

    @classmethod
    def perform(cls, root, info):
        webhook_delete(user=require_user(info))
        return {"deleted": True}


class NotificationsMutation(graphene.ObjectType):
    mark_notifications_read = MarkNotificationsRead.Field()
    set_webhook = SetWebhook.Field()
    delete_webhook = DeleteWebhook.Field()
