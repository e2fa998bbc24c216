"""MariaDB ``UUID`` values that may have arrived shifted (issue 16, item 4).

MariaDB writes a ``UUID`` to the binlog without its trailing zero bytes, and Debezium's
MariaDB converter (``MariaDbValueConverters.convertUuid``: ``new BigInteger(1, bytes)``)
reads the shorter value as a number, so the missing bytes come back at the front:
``e713f4e3-…-63347686bd00`` arrives as ``00e713f4-…-8d63347686bd``. Snapshot reads go
through JDBC and are right. The arrived value alone cannot tell a shifted value from a true
one that starts with zero bytes (one UUID in 256 does), so the mirror cannot correct it:
it writes what arrived and reports every streamed value that starts with a zero byte, with
its key, in the batch log (``suspect_uuids``) and an error line naming the keys and the way
to heal them: `cdcmirror reconcile --deep`, then `cdcmirror repair --keys-from`. Pure."""

from __future__ import annotations

from cdcmirror import dialects
from cdcmirror.mirror.carriers import parse_carrier
from cdcmirror.mirror.envelope import q
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.toast import UUID_NAME

SAMPLE_KEYS = 20  # keys named in the error line of a batch


def uuid_columns(table: MirrorTable) -> list[str]:
    """The table's MariaDB/MySQL ``UUID`` columns (none for PostgreSQL: its values are
    right)."""
    if not dialects.of(table.dialect).shifted_uuids:
        return []
    return [c.name for c in table.columns if parse_carrier(c.carrier).name == UUID_NAME]


def suspect_sql(table: MirrorTable) -> str | None:
    """Over decoded events: a streamed event with a UUID value that starts with a zero byte
    (in a key column, deletes too: their key is the shifted one); None without UUID
    columns."""
    columns = uuid_columns(table)
    if not columns:
        return None

    def starts_with_zero(names: list[str]) -> str:
        return " OR ".join(f"{q(n)} LIKE '00%'" for n in names) or "false"

    keys = [c for c in columns if c in table.key]
    return (
        f"(_cdc_op IN ('c', 'u') AND ({starts_with_zero(columns)})) "
        f"OR (_cdc_op = 'd' AND ({starts_with_zero(keys)}))"
    )


def suspect_message(identifier: str, count: int, keys: list[str], table: MirrorTable) -> str:
    """The error line of a batch with ``count`` suspect values (``keys``: some of theirs).

    >>> line = suspect_message("db.t", 3, ["id=7", "id=9"], _example())
    >>> print(line)  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    db.t: 3 event(s) carry MariaDB UUID values (column(s) u) that start with a zero byte: ...
    (keys id=7, id=9 and 1 more)... `cdcmirror repair --table t --keys-from drift.json`
    """
    more = f" and {count - len(keys)} more" if count > len(keys) else ""
    return (
        f"{identifier}: {count} event(s) carry MariaDB UUID values (column(s) "
        f"{', '.join(uuid_columns(table))}) that start with a zero byte: either true values "
        "or values whose trailing zero bytes the binlog dropped and Debezium put in front "
        f"(keys {', '.join(keys)}{more}). Check and heal them: `cdcmirror reconcile --deep "
        "--output json > drift.json`, then `cdcmirror repair --table "
        f"{identifier.split('.')[-1]} --keys-from drift.json`"
    )


def _example() -> MirrorTable:
    from cdcmirror.mirror.spec import MirrorColumn

    columns = (
        MirrorColumn("id", "int", "int32"),
        MirrorColumn("u", "string", f"string {UUID_NAME}"),
    )
    return MirrorTable("db.t", "s.db.t", "mariadb", "db.t", ("id",), "upsert", columns)
