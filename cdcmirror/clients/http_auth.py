"""HTTP basic authentication, as the REST clients (Kafka Connect, the schema registry) send
it. Pure."""

from __future__ import annotations

import base64


def basic_auth(user: str, password: str) -> str:
    """An HTTP basic ``Authorization`` header value.

    >>> basic_auth("u", "p")
    'Basic dTpw'
    """
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
