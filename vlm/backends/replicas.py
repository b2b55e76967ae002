"""Several base URLs behind one ``openai`` scorer (one per vLLM replica), with health checks (issue #18).

Requests go to the replicas that are up, in turn. A replica whose request fails (no connection, a
timeout, a 5xx) is marked down and gets no requests for ``replica_retry_s``; after that, the next
request first sends it a health check (``GET /models``), and only a replica that answers it takes
requests again. With every replica down, ``pick`` raises one line naming each and its last problem.
With a single URL nothing is ever marked down: the scorer retries that server as it always did.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vlm.errors import VLMError


@dataclass
class Replica:
    """One server: its base URL (with /v1), its HTTP client, and until when it is considered down."""

    url: str
    client: Any
    down_until: float = 0.0
    """``time.monotonic()`` before which the replica gets nothing; 0: up."""
    problem: str = ""
    """Why it was last marked down."""


class Replicas:
    """Picks the replica for each request and keeps their health (thread-safe).

    Args:
        urls: base URLs, each ending in /v1.
        make_client: builds the HTTP client of one base URL.
        healthy: the health check of a replica (True: it answers ``GET /models``); it must not raise.
        retry_s: how long a failed replica stays down before it is health-checked again.
    """

    def __init__(
        self,
        urls: list[str],
        make_client: Callable[[str], Any],
        healthy: Callable[[Replica], bool],
        retry_s: float,
    ) -> None:
        if len(set(urls)) != len(urls):
            raise VLMError(f"the scorer's base URLs repeat one: {urls}")
        self.replicas = [Replica(url.rstrip("/"), make_client(url)) for url in urls]
        self._healthy = healthy
        self._retry_s = retry_s
        self._next = 0
        self._lock = threading.Lock()

    def pick(self) -> Replica:
        """The next replica that is up; raises VLMError when all are down (health checks included).

        A down replica whose time is up is health-checked here first, on the caller's thread (at most
        once per ``retry_s`` per replica), so one that recovered rejoins even while others serve.
        """
        now = time.monotonic()
        with self._lock:
            start, self._next = self._next, self._next + 1
            order = [self.replicas[(start + i) % len(self.replicas)] for i in range(len(self.replicas))]
            due = [r for r in order if r.down_until and r.down_until <= now]
            for replica in due:  # claimed for one health check: other threads skip it meanwhile
                replica.down_until = now + self._retry_s
        for replica in due:
            if self._healthy(replica):
                with self._lock:
                    replica.down_until, replica.problem = 0.0, ""
                return replica
        with self._lock:
            up = [r for r in order if not r.down_until]
        if up:
            return up[0]
        raise VLMError(
            f"all {len(self.replicas)} VLM replicas are down ("
            + "; ".join(f"{r.url}: {r.problem}" for r in self.replicas)
            + f"); each is health-checked again {self._retry_s:g} s after it failed (replica_retry_s)"
        )

    def mark_down(self, replica: Replica, problem: str) -> None:
        """Takes a replica out of rotation for ``retry_s`` (never the only one: it is retried as is)."""
        if len(self.replicas) < 2:
            return
        with self._lock:
            replica.down_until = time.monotonic() + self._retry_s
            replica.problem = problem

    def close(self) -> None:
        for replica in self.replicas:
            replica.client.close()
