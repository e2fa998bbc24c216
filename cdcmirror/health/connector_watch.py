"""The continuous mirror's watch on its source connector. Spark runs a batch only when Kafka
has new events, so a connector that FAILED (the schema registry was down for a moment, the
source restarted at the wrong time) would leave the job idle and silent. A thread reads the
connector's status every ``mirror.connector_check_seconds``, logs what is wrong (the state,
the cause from the trace) and, with ``mirror.restart_failed_tasks`` on, restarts what FAILED
through Connect's REST API, with a backoff (``RestartBackoff``) so a lasting cause costs
one restart every 10 minutes. PAUSED and STOPPED connectors are someone's decision: logged,
never resumed. Restarting is safe for the mirror: Debezium resumes from its committed
offsets, and whatever it sends twice the position guard skips. ``source_check`` (MySQL/MariaDB:
``source/binlog_settings.py``) is looked at as often: a setting that loses changes before they
reach Kafka is logged as an error at every check."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from cdcmirror.clients.connect import ConnectClient
from cdcmirror.config.settings import Connect
from cdcmirror.health.connector import RestartBackoff, failed, status_problem

logger = logging.getLogger(__name__)


class ConnectorWatch:
    """The watch thread for the ``with`` block around the running query."""

    def __init__(
        self,
        connect: Connect,
        name: str,
        every: float,
        restart: bool,
        source_check: Callable[[], str | None] | None = None,
    ) -> None:
        self.url, self.name, self.every, self.restart = connect.url, name, every, restart
        self.source_check = source_check
        self.backoff = RestartBackoff()
        self.restarts = 0
        self._client = ConnectClient.of(connect, timeout=10.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cdcmirror-connector", daemon=True)

    def __enter__(self) -> ConnectorWatch:
        if self.every > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.check(time.monotonic())
            except Exception as exc:  # Connect restarting, a network blip: look again later
                logger.warning("connector %s: its state cannot be read: %s", self.name, exc)
            self.check_source()

    def check_source(self) -> None:
        """Log what the source's settings lose (``source_check``), if anything."""
        if self.source_check is None:
            return
        try:
            problem = self.source_check()
        except Exception as exc:  # the source restarting: look again later
            logger.warning("connector %s: the source's settings cannot be read: %s", self.name, exc)
            return
        if problem:
            logger.error("connector %s: %s", self.name, problem)

    def check(self, now: float) -> None:
        """One look at the connector: log a problem, restart what FAILED when due."""
        if self.name not in self._client.names():
            return  # not registered (bootstrap --no-connector): nothing to watch
        status = self._client.status(self.name)
        problem = status_problem(self.name, status, self.url)
        if problem is None:
            self.backoff.running()
            return
        if not (self.restart and failed(status)):
            logger.error("%s", problem)
            return
        if not self.backoff.due(now):
            logger.error("%s (the mirror restarts it again in %.0f s)", problem,
                         self.backoff.next_at - now)  # fmt: skip
            return
        self._client.restart_failed(self.name)
        self.restarts += 1
        wait = self.backoff.restarted(now)
        logger.warning(
            "connector %s: restarted what FAILED (restart %d of this job; if it fails again, "
            "the next restart in %.0f s, mirror.restart_failed_tasks = false turns this "
            "off). It was: %s",
            self.name,
            self.restarts,
            wait,
            problem,
        )
