"""Circuit breakers, one per tool endpoint and process: after 5 failures within 60 s a tool is
not called for 60 s, and the model is told `[circuit_open]` so it can use another tool or
finish with what it has, instead of every run in the worker hammering a broken dependency."""

import threading
import time
from collections import deque

FAILURES_TO_OPEN = 5
WINDOW_SECONDS = 60.0
OPEN_SECONDS = 60.0


class CircuitBreaker:
    def __init__(
        self,
        *,
        failures: int = FAILURES_TO_OPEN,
        window: float = WINDOW_SECONDS,
        cooldown: float = OPEN_SECONDS,
    ):
        self.failures = failures
        self.window = window
        self.cooldown = cooldown
        self._lock = threading.Lock()
        self._recent: deque[float] = deque()
        self._open_until = 0.0

    def allow(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        with self._lock:
            return now >= self._open_until

    def record_failure(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            self._recent.append(now)
            while self._recent and self._recent[0] < now - self.window:
                self._recent.popleft()
            if len(self._recent) >= self.failures:
                self._open_until = now + self.cooldown
                self._recent.clear()

    def record_success(self) -> None:
        with self._lock:
            self._recent.clear()


class BreakerRegistry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._breakers: dict[str, CircuitBreaker] = {}

    def for_endpoint(self, name: str) -> CircuitBreaker:
        with self._lock:
            return self._breakers.setdefault(name, CircuitBreaker())

    def clear(self) -> None:
        with self._lock:
            self._breakers.clear()


breakers = BreakerRegistry()
