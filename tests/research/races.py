"""Research starts racing each other: each from a thread of its own, all released at once."""

import threading
from typing import Any

from django.db import connection

from research.services import report_start


def starts_at_once(starts: list[dict[str, Any]], refusals: dict[type[Exception], str]) -> list[str]:
    """Call report_start with each keyword set, every call in its own thread behind one barrier;
    the outcomes: "created", the label `refusals` gives the refusal met, or "error: ..." for
    anything else (which the caller's assertion then shows)."""
    barrier = threading.Barrier(len(starts))
    outcomes: list[str] = []
    lock = threading.Lock()

    def start(kwargs: dict[str, Any]) -> None:
        try:
            barrier.wait()
            report_start(**kwargs)
            result = "created"
        except tuple(refusals) as exc:
            result = refusals[type(exc)]
        except Exception as exc:
            result = f"error: {exc!r}"
        finally:
            connection.close()
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=start, args=(kwargs,)) for kwargs in starts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes
