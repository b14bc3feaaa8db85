"""Fixed-window rate limits kept in Django's cache: Redis in production (CACHE_URL), the
process's memory otherwise. A cache that cannot be reached lets requests through (logged): a
rate limit must never be the reason a request fails."""

import ipaddress
import logging
import math
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

from config.exceptions import ApplicationError

logger = logging.getLogger(__name__)

_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([smhd])\s*$")


@dataclass(frozen=True)
class Rate:
    limit: int
    seconds: int

    @classmethod
    def parse(cls, text: str) -> "Rate | None":
        """'30/m', '1000/h', '5/10s'; empty or '0' switches the limit off."""
        if not text or text.strip() in {"", "0"}:
            return None
        match = _RATE.match(text)
        if match is None:
            raise ValueError(f"a rate is N/s, N/m, N/h or N/d (or N/10m), not {text!r}")
        count, multiple, unit = match.groups()
        return cls(limit=int(count), seconds=int(multiple or 1) * _PERIODS[unit])


class RateLimited(ApplicationError):
    code = "rate_limited"

    def __init__(self, *, retry_after: int) -> None:
        super().__init__(f"too many requests; try again in {retry_after} s")
        self.retry_after = retry_after


def rate_limit_hit(*, scope: str, key: str, rate: Rate | None, amount: int = 1) -> None:
    """Count `amount` against `key` in `scope`; raise RateLimited past the rate's limit."""
    if rate is None or amount <= 0:
        return
    now = time.time()
    window = int(now // rate.seconds)
    name = f"ratelimit:{scope}:{key}:{window}"
    try:
        cache.add(name, 0, timeout=rate.seconds + 5)
        count = cache.incr(name, amount)
    except ValueError:  # the entry expired between add and incr: a new window
        return
    except Exception:  # an unreachable cache must not fail the request
        logger.warning("rate limit cache unavailable; %s not counted", scope, exc_info=True)
        return
    if count > rate.limit:
        raise RateLimited(retry_after=max(1, math.ceil(rate.seconds - now % rate.seconds)))


def rate_limit_refund(*, scope: str, key: str, rate: Rate | None, amount: int = 1) -> None:
    """Give back `amount` counted against `key` in `scope` in this window: a request counted at
    the door and then refused (a research start with an empty prompt) spends no rate."""
    if rate is None or amount <= 0:
        return
    name = f"ratelimit:{scope}:{key}:{int(time.time() // rate.seconds)}"
    try:
        if (cache.get(name) or 0) >= amount:
            cache.decr(name, amount)
    except ValueError:  # the window ended meanwhile: nothing left to give back
        return
    except Exception:  # an unreachable cache must not fail the request
        logger.warning("rate limit cache unavailable; %s not refunded", scope, exc_info=True)


@contextmanager
def rate_limit_spent(*, scope: str, key: str) -> Iterator[None]:
    """Count one against `key` in `scope` (settings.RATE_LIMITS[scope]) for what the block does;
    refused inside it (an ApplicationError other than RateLimited: an empty prompt, a run
    already going), it is given back and the error goes on."""
    limit = rate(scope)
    rate_limit_hit(scope=scope, key=key, rate=limit)
    try:
        yield
    except ApplicationError as error:
        if not isinstance(error, RateLimited):
            rate_limit_refund(scope=scope, key=key, rate=limit)
        raise


def rate(name: str) -> Rate | None:
    """The configured rate called `name` in settings.RATE_LIMITS."""
    return Rate.parse(settings.RATE_LIMITS.get(name, ""))


def client_address(request: HttpRequest) -> str:
    """The client's IP address: REMOTE_ADDR, or with TRUSTED_PROXY_COUNT proxies in front the
    address the outermost trusted proxy saw (X-Forwarded-For read from the right). Empty when
    there is none that parses as an IP address (django-axes stores it in an inet column)."""
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies > 0:
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
        if len(hops) >= proxies and _is_ip(hops[-proxies]):
            return hops[-proxies]
    remote = request.META.get("REMOTE_ADDR", "")
    return remote if _is_ip(remote) else ""


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
