"""``source.include``: ``schema.table`` globs. Pure."""

from __future__ import annotations

from fnmatch import fnmatchcase

_GLOB_CHARS = set("*?[")


def is_included(qualified: str, patterns: list[str]) -> bool:
    """Whether ``schema.table`` matches one of the globs.

    >>> is_included("public.orders", ["public.*"])
    True
    >>> is_included("audit.orders", ["public.*", "sales.order?"])
    False
    """
    return any(fnmatchcase(qualified, p) for p in patterns)


def _literal(part: str) -> bool:
    return not (set(part) & _GLOB_CHARS)


def literal_schemas(patterns: list[str]) -> list[str]:
    """Schemas named without a glob: each must exist.

    >>> literal_schemas(["public.*", "s?.t", "sales.orders"])
    ['public', 'sales']
    """
    out = []
    for p in patterns:
        schema = p.split(".", 1)[0]
        if _literal(schema) and schema not in out:
            out.append(schema)
    return out


def literal_tables(patterns: list[str]) -> list[str]:
    """Tables named without any glob: each must be found (and be readable).

    >>> literal_tables(["public.*", "sales.orders"])
    ['sales.orders']
    """
    return [p for p in patterns if _literal(p) and "." in p]


def check_patterns(patterns: list[str]) -> list[str]:
    """Problems with the patterns themselves (each must be ``schema.table``).

    >>> check_patterns(["public.*", "orders"])
    ["source.include entry 'orders' is not schema.table (e.g. 'public.orders' or 'public.*')"]
    """
    problems = []
    if not patterns:
        problems.append("source.include is empty; list schema.table globs such as 'public.*'")
    for p in patterns:
        if p.count(".") != 1 or not all(p.split(".")):
            problems.append(
                f"source.include entry {p!r} is not schema.table (e.g. 'public.orders' or "
                "'public.*')"
            )
    return problems
