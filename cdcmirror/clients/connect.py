"""A small client of the Kafka Connect REST API (stdlib HTTP; no secrets logged)."""

from __future__ import annotations

import contextlib
import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from cdcmirror.clients.http_auth import basic_auth
from cdcmirror.config.masking import mask_url_password
from cdcmirror.config.settings import Connect
from cdcmirror.exceptions import ConfigError, ConnectorError, ServiceUnavailableError

logger = logging.getLogger(__name__)

STALE_FAILURE = 20.0  # seconds Connect may still report a restarted task as FAILED
CONFLICT_WAIT = 60.0  # seconds a request is asked again while Connect answers a momentary 409


def refused(url: str, code: int) -> str:
    return (
        f"Kafka Connect at {mask_url_password(url)} refused cdcmirror's login (HTTP {code}): fix "
        "connect.username and connect.password (or connect.password_file, or "
        "CDCMIRROR_CONNECT__PASSWORD)"
    )


def momentary(code: int, detail: str) -> bool:
    """Whether Connect's answer is one of a moment: its 409 while a rebalance is under way,
    or while it holds a config older than the config topic's (its own words say
    "momentarily" or "rebalance"), and its 500 while a rebalance is expected
    ("Request cannot be completed because a rebalance is expected"); any other 409 (a name
    already taken) or 500 is not asked again."""
    words = detail.lower()
    if code == 500:
        return "rebalance is expected" in words
    return code == 409 and ("momentarily" in words or "rebalance" in words)


def _states(status: dict[str, Any]) -> list[str]:
    """The connector's state followed by each task's."""
    return [status["connector"]["state"]] + [t["state"] for t in status["tasks"]]


class _Momentary(ConnectorError):
    """An answer that goes away by itself (see ``momentary``)."""


class ConnectClient:
    """Create, validate, inspect and delete connectors on one Connect cluster."""

    def __init__(
        self, url: str, timeout: float = 30.0, auth: tuple[str, str] | None = None
    ) -> None:
        """``auth``: the user name and password of Connect's basic authentication."""
        self.url = url.rstrip("/")
        self.shown = mask_url_password(self.url)  # the URL in messages
        self.timeout = timeout
        self.conflict_wait = CONFLICT_WAIT
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if auth is not None:
            self._headers["Authorization"] = basic_auth(*auth)

    @classmethod
    def of(cls, connect: Connect, timeout: float = 30.0) -> ConnectClient:
        """The client of the configured Connect cluster (``[connect]``)."""
        return cls(connect.url, timeout, connect.auth)

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        """One REST call. A 409 that Connect answers while its workers rebalance or its
        config topic moves under the request (another connector created or changed at that
        moment), and its 500 while a rebalance is expected, are asked again, for up to
        ``conflict_wait`` seconds."""
        deadline = time.monotonic() + self.conflict_wait
        pause = 0.25
        while True:
            try:
                return self._request_once(method, path, body)
            except _Momentary as exc:
                if time.monotonic() + pause > deadline:
                    raise ConnectorError(
                        f"{exc} (asked again for {self.conflict_wait:.0f} s; is another "
                        "client changing connectors all the time?)"
                    ) from exc
                logger.info("Kafka Connect is busy (%s); asking again", exc)
                time.sleep(pause)
                pause = min(pause * 2, 4.0)

    def _request_once(self, method: str, path: str, body: Any) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.shown}{path}", data=data, method=method, headers=self._headers
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise ConfigError(refused(self.url, exc.code)) from exc
            detail = exc.read().decode("utf-8", "replace")
            with contextlib.suppress(ValueError, AttributeError):
                detail = json.loads(detail).get("message", detail)
            error = ConnectorError if not momentary(exc.code, detail) else _Momentary
            raise error(
                f"Kafka Connect at {self.shown} answered {exc.code} to {method} {path}: {detail}"
            ) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ServiceUnavailableError(
                f"Kafka Connect at {self.shown} cannot be reached ({exc}); start it "
                "(`cdcmirror stack up`) or fix connect.url"
            ) from exc
        return json.loads(raw) if raw else None

    def validate(self, config: dict[str, str]) -> list[str]:
        """Errors Connect's validate endpoint reports for a config, as 'key: message' lines."""
        cls = urllib.parse.quote(config["connector.class"], safe="")
        result = self._request("PUT", f"/connector-plugins/{cls}/config/validate", config)
        errors = []
        for item in result.get("configs", []):
            value = item.get("value", {})
            for message in value.get("errors", []):
                errors.append(f"{value.get('name')}: {message}")
        return errors

    def put(self, name: str, config: dict[str, str], validate: bool = True) -> dict[str, Any]:
        """Create or update a connector (idempotent), after validating its config unless the
        caller just did."""
        config = {**config, "name": name}
        errors = self.validate(config) if validate else []
        if errors:
            raise ConnectorError(
                f"Kafka Connect rejects the config of connector {name!r}:\n  " + "\n  ".join(errors)
            )
        quoted = urllib.parse.quote(name, safe="")
        result: dict[str, Any] = self._request("PUT", f"/connectors/{quoted}/config", config)
        return result

    def status(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._request(
            "GET", f"/connectors/{urllib.parse.quote(name, safe='')}/status"
        )
        return result

    def config(self, name: str) -> dict[str, str]:
        result: dict[str, str] = self._request(
            "GET", f"/connectors/{urllib.parse.quote(name, safe='')}/config"
        )
        return result

    def names(self) -> list[str]:
        return list(self._request("GET", "/connectors"))

    def delete(self, name: str) -> None:
        if name in self.names():
            self._request("DELETE", f"/connectors/{urllib.parse.quote(name, safe='')}")

    def _path(self, name: str, action: str = "") -> str:
        return f"/connectors/{urllib.parse.quote(name, safe='')}{action}"

    def stop(self, name: str, timeout: float = 60.0) -> None:
        """Stop a connector (its tasks shut down; the config stays) and wait for STOPPED."""
        self._request("PUT", self._path(name, "/stop"))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.status(name)["connector"]["state"] == "STOPPED":
                return
            time.sleep(0.5)
        raise ConnectorError(f"connector {name!r} did not stop within {timeout:.0f}s")

    def restart_failed(self, name: str) -> None:
        """Restart the connector and its tasks that are FAILED (the others keep running)."""
        self._request("POST", self._path(name, "/restart?includeTasks=true&onlyFailed=true"))

    def resume(self, name: str) -> None:
        self._request("PUT", self._path(name, "/resume"))

    def offsets(self, name: str) -> list[dict[str, Any]]:
        """The connector's source offsets (``partition`` / ``offset`` pairs)."""
        result = self._request("GET", self._path(name, "/offsets"))
        return list(result.get("offsets", []))

    def alter_offsets(self, name: str, offsets: list[dict[str, Any]]) -> None:
        """Set the offsets of a STOPPED connector (it resumes from there)."""
        self._request("PATCH", self._path(name, "/offsets"), {"offsets": offsets})

    def reset_offsets(self, name: str) -> None:
        """Forget a STOPPED connector's offsets (it starts over, with a new snapshot)."""
        self._request("DELETE", self._path(name, "/offsets"))

    def failed(self, name: str) -> bool:
        """Whether the connector or one of its tasks is FAILED."""
        return "FAILED" in _states(self.status(name))

    def wait_running(
        self, name: str, timeout: float = 90.0, restarted: bool = False
    ) -> dict[str, Any]:
        """Wait until the connector and all its tasks are RUNNING; fail with the trace if not.
        ``restarted``: what FAILED was just restarted (or given a new config), so Connect's
        status may still say FAILED for up to ``STALE_FAILURE`` seconds; a FAILED after
        another state, or past that time, is a failure."""
        start = time.monotonic()
        status: dict[str, Any] = {}
        while time.monotonic() < start + timeout:
            try:
                status = self.status(name)
            except ConnectorError:
                time.sleep(0.5)
                continue
            states = _states(status)
            if "FAILED" not in states:
                restarted = False
            elif not restarted or time.monotonic() > start + STALE_FAILURE:
                traces = [t.get("trace", "") for t in status["tasks"] if t["state"] == "FAILED"]
                trace = (traces or [status["connector"].get("trace", "")])[0]
                raise ConnectorError(
                    f"connector {name!r} FAILED: {trace.splitlines()[0] if trace else '?'}"
                )
            if status["tasks"] and all(s == "RUNNING" for s in states):
                return status
            time.sleep(0.5)
        raise ConnectorError(f"connector {name!r} not RUNNING after {timeout:.0f}s: {status}")
