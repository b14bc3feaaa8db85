import threading

import pytest
from django.db import connections

from research.runloop import database, on_run_loop, run_loop


def _thread_connection():
    wrapper = connections["default"]
    wrapper.ensure_connection()
    return threading.current_thread().name, wrapper


async def _on_the_loop():
    assert on_run_loop()
    return await database(_thread_connection)


@pytest.mark.django_db(transaction=True)
def test_run_loop_database_work_runs_on_its_threads_and_their_connections_close():
    thread_name, wrapper = run_loop.run(_on_the_loop)
    assert thread_name.startswith("deepcite-research-db")
    assert wrapper is not connections["default"]  # that thread's own connection, not the caller's
    assert wrapper.connection is not None

    run_loop.close_database_connections()
    assert wrapper.connection is None

    # Runs started afterwards get new threads, and connections of their own.
    thread_name, again = run_loop.run(_on_the_loop)
    assert thread_name.startswith("deepcite-research-db")
    assert again.connection is not None
    assert again is not wrapper


async def _off_the_loop():
    return on_run_loop(), await database(_thread_connection)


@pytest.mark.django_db
def test_a_synchronous_caller_keeps_its_database_work_in_its_own_thread():
    from asgiref.sync import async_to_sync

    carried, (thread_name, wrapper) = async_to_sync(_off_the_loop)()
    assert carried is False
    assert thread_name == threading.current_thread().name
    assert wrapper is connections["default"]  # the caller's connection, inside its test transaction
