"""Writer schemas by id from a schema registry's Confluent-compatible API, cached by id.

``GET {url}/schemas/ids/{id}`` answers ``{"schema": "<Avro schema JSON>"}`` on Confluent's
Schema Registry and on Apicurio Registry's compatible API (``/apis/ccompat/v7``). A schema
id never changes its schema, so each id found is fetched once per process. An id not found
(404) is asked again a few times with a short backoff (one backoff for all the ids a batch
lacks), and again on every later batch: a registry replica can lag behind the one the
connector registered with, and a missing id is never remembered as missing for the life of
the job.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from cdcmirror.clients.http_auth import basic_auth
from cdcmirror.config.masking import mask_url_password
from cdcmirror.exceptions import ConfigError, ServiceUnavailableError

NOT_FOUND_RETRIES = (0.5, 1.0, 2.0)  # seconds between the asks for an id answered 404


def refused(url: str, code: int) -> str:
    """What a registry that refused cdcmirror's login (HTTP 401/403) is reported as."""
    return (
        f"the schema registry at {mask_url_password(url)} refused cdcmirror's login "
        f"(HTTP {code}): set "
        "kafka.schema_registry_username and kafka.schema_registry_password (or "
        "kafka.schema_registry_password_file)"
    )


class SchemaRegistry:
    def __init__(
        self,
        url: str,
        timeout: float = 15.0,
        retries: tuple[float, ...] = NOT_FOUND_RETRIES,
        auth: tuple[str, str] | None = None,
    ) -> None:
        """``auth``: the user name and password of the registry's basic authentication."""
        self.url = url.rstrip("/")
        self.shown = mask_url_password(self.url)  # the URL in messages
        self.timeout = timeout
        self.retries = retries
        self._auth = auth
        self._cache: dict[int, str] = {}
        self._lock = threading.Lock()

    def schemas(self, ids: list[int]) -> dict[int, str]:
        """The schema text of each id the registry has; ids it does not have are left out
        (their events go to the dead-letter table)."""
        with self._lock:
            missing = sorted(set(ids) - set(self._cache))
            # the backoff is the batch's, not each id's: a flood of events naming ids that
            # do not exist costs these few pauses, never minutes per batch
            for pause in (None, *self.retries):
                if not missing:
                    break
                if pause is not None:
                    time.sleep(pause)
                found = {sid: self._fetch(sid) for sid in missing}
                self._cache.update({sid: t for sid, t in found.items() if t is not None})
                missing = [sid for sid, text in found.items() if text is None]
            return {sid: self._cache[sid] for sid in ids if sid in self._cache}

    def latest(self, subject: str) -> str | None:
        """The newest schema text of ``subject``; None when the registry has no such
        subject."""
        body = self._latest(subject)
        return None if body is None else str(body["schema"])

    def latest_id(self, subject: str) -> int | None:
        """The id of the newest schema of ``subject`` (its text kept: ``schemas`` knows
        it); None when the registry has no such subject or names no id."""
        body = self._latest(subject)
        sid = None if body is None else body.get("id")
        if body is None or not isinstance(sid, int):
            return None
        with self._lock:
            self._cache[sid] = str(body["schema"])
        return sid

    def _latest(self, subject: str) -> dict[str, Any] | None:
        from urllib.parse import quote

        return self._fetch_body(f"subjects/{quote(subject, safe='')}/versions/latest", subject)

    def _fetch(self, sid: int) -> str | None:
        body = self._fetch_body(f"schemas/ids/{sid}", f"schema id {sid}")
        return None if body is None else str(body["schema"])

    def _fetch_body(self, path: str, what: str) -> dict[str, Any] | None:
        """The registry's JSON answer for ``path`` (with a ``schema`` text); None: 404."""
        request = urllib.request.Request(f"{self.shown}/{path}")
        if self._auth is not None:
            request.add_header("Authorization", basic_auth(*self._auth))
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                body = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            if exc.code in (401, 403):
                raise ConfigError(refused(self.url, exc.code)) from exc
            raise ServiceUnavailableError(
                f"the schema registry at {self.shown} answered HTTP {exc.code} for {what}; "
                "check kafka.schema_registry_url (a Confluent-compatible API)"
            ) from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ServiceUnavailableError(
                f"the schema registry at {self.shown} is not reachable ({exc}); start it "
                "(`cdcmirror stack up` runs one) or set kafka.schema_registry_url"
            ) from exc
        schema = body.get("schema") if isinstance(body, dict) else None
        if not isinstance(schema, str):
            raise ServiceUnavailableError(
                f"the schema registry at {self.shown} gave no schema for {what}: "
                "is kafka.schema_registry_url a Confluent-compatible API?"
            )
        return dict(body)
