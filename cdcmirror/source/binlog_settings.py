"""MySQL/MariaDB binlog settings the mirror depends on (DESIGN.md: never lose a change silently).

Debezium reads row events from the binlog; three server settings decide whether every change
is there for it to read:

- ``binlog_format = ROW`` and ``binlog_row_image = FULL``: otherwise statements, or rows
  without their unchanged columns, are logged (Debezium stops at start, with a long trace).
- MariaDB ``log_bin_compress = OFF``: with it ON, MariaDB writes row events of at least
  ``log_bin_compress_min_len`` bytes as compressed events, which Debezium's binlog client
  cannot read. The server then sends a placeholder ("Dummy event replacing event type ...
  that slave cannot handle") in their place and the connector goes on RUNNING: those
  changes never reach Kafka. Reproduced by ``test_compressed_binlog_is_refused_and_reported``.
- MySQL ``binlog_transaction_compression = OFF``: Debezium hands the events inside a
  compressed transaction to its row handlers without moving the event position
  (``handleTransactionPayload``), so two changes of one row in such a transaction share one
  source position, and across a batch boundary the later one compares as a replay (not
  tested here: no MySQL server on this machine).

``bootstrap`` refuses to start on a server with one of them wrong; ``check`` and ``reconcile``
report it as an error and the running mirror logs it at every connector check.
"""

from __future__ import annotations

from typing import Any

_SETTINGS = (
    "log_bin",
    "binlog_format",
    "binlog_row_image",
    "log_bin_compress",
    "binlog_transaction_compression",
)
_SQL = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ({})".format(
    ", ".join(f"'{name}'" for name in _SETTINGS)
)


def binlog_problems(settings: dict[str, str]) -> list[str]:
    """What is wrong with the server's binlog ``settings`` (variable -> value), each with the
    fix; a variable the server does not have (MySQL has no ``log_bin_compress``) is fine.

    >>> binlog_problems({"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL"})
    []
    >>> binlog_problems({"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL",
    ...                  "log_bin_compress": "ON"})[0][:62]
    'log_bin_compress is ON: MariaDB replaces compressed row events'
    >>> binlog_problems({"log_bin": "OFF", "binlog_format": "MIXED"})[1][:34]
    'binlog_format is MIXED, not ROW: s'
    >>> binlog_problems({"binlog_transaction_compression": "ON"})[0][:45]
    'binlog_transaction_compression is ON: Debeziu'
    """
    out = []
    value = {k.lower(): str(v).upper() for k, v in settings.items()}
    if value.get("log_bin", "ON") != "ON":
        out.append(
            "log_bin is OFF: the server writes no binlog for Debezium to read. Set log_bin "
            "(and server_id) in the server's configuration and restart it"
        )
    if value.get("binlog_format", "ROW") != "ROW":
        out.append(
            f"binlog_format is {value['binlog_format']}, not ROW: statements are logged "
            "instead of changed rows. Run SET GLOBAL binlog_format = 'ROW' and set it in the "
            "server's configuration"
        )
    if value.get("binlog_row_image", "FULL") != "FULL":
        out.append(
            f"binlog_row_image is {value['binlog_row_image']}, not FULL: updates are logged "
            "without their unchanged columns. Run SET GLOBAL binlog_row_image = 'FULL' and set "
            "it in the server's configuration"
        )
    if value.get("log_bin_compress", "OFF") not in ("OFF", "0"):
        out.append(
            "log_bin_compress is ON: MariaDB replaces compressed row events with a placeholder "
            "for Debezium, which cannot read them, so those changes never reach the mirror. "
            "Run SET GLOBAL log_bin_compress = OFF and remove it from the server's "
            "configuration; changes made while it was ON are lost to the stream: "
            "`cdcmirror reconcile --deep` finds them and `cdcmirror repair` re-reads them"
        )
    if value.get("binlog_transaction_compression", "OFF") not in ("OFF", "0"):
        out.append(
            "binlog_transaction_compression is ON: Debezium gives every change inside a "
            "compressed transaction the position of the whole transaction, so two changes "
            "of one row in it cannot be told apart by position and the mirror may skip the "
            "later one. Run SET GLOBAL binlog_transaction_compression = OFF and remove it from "
            "the server's configuration"
        )
    return out


def read_binlog_settings(conn: Any) -> dict[str, str]:
    """The server's binlog variables (a SQLAlchemy connection to MySQL/MariaDB)."""
    from sqlalchemy import text

    return {str(r[0]): str(r[1]) for r in conn.execute(text(_SQL))}


def read_binary_logs(conn: Any) -> list[tuple[str, int]]:
    """The server's binlog files and their sizes (``SHOW BINARY LOGS``)."""
    from sqlalchemy import text

    return [(str(r[0]), int(r[1])) for r in conn.execute(text("SHOW BINARY LOGS"))]
