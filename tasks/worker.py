"""The worker's consumer: Celery's own, with a broker restart survived.

Celery 5.7 with kombu 5.7's Redis transport, on a lost broker connection, first collects the
connection (which drops the transport's client) and then closes it; closing the Redis channel
restores the unacknowledged messages, which needs that client: `AttributeError: 'NoneType'
object has no attribute 'hostname'`, "Unrecoverable error", and the worker exits while its runs
go on in its threads. Closing the channel first, while the transport is whole, lets the restore
fail as what it is (a connection error, which Celery ignores) or succeed once the broker is back;
Celery's own handling then finds the channel closed and reconnects. Restoring is not what keeps
a run safe here (tasks are acknowledged late, a run holds a lease and the reaper resumes one
whose lease lapses); keeping the worker alive is. Configured by CELERY_WORKER_CONSUMER."""

import logging
import warnings

from celery.exceptions import CPendingDeprecationWarning
from celery.worker.consumer import Consumer as CeleryConsumer
from celery.worker.consumer.consumer import COLLECT_SOCKET_TIMEOUT, bound_open_broker_sockets
from kombu.common import ignore_errors

logger = logging.getLogger(__name__)

# Runs keep going through a lost connection by choice (CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_
# CONNECTION_LOSS = False, set explicitly): Celery's notice about its future default is noise.
warnings.filterwarnings(
    "ignore", message=r"\s*In Celery 5\.1 we introduced", category=CPendingDeprecationWarning
)


class Consumer(CeleryConsumer):
    def on_connection_error_after_connected(self, exc: Exception) -> None:
        connection = self.connection
        channel = getattr(connection, "_default_channel", None)  # kombu keeps no public handle
        if channel is not None:
            bound_open_broker_sockets(connection, COLLECT_SOCKET_TIMEOUT)
            ignore_errors(connection, connection.maybe_close_channel, channel)
        super().on_connection_error_after_connected(exc)
