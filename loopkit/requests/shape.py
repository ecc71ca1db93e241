"""The shape a request record must have before any code touches it, and how it is written.

A record is a file anyone can edit, restore from a backup or break. Every field loopkit
reads is checked once, at load: a wrong shape is a one-line error naming the file and the
field (``BadInput``, exit 65), never an exception deep in some command. Fields loopkit does
not know are not looked at (they are kept and written back unchanged).

Each field declares its own shape in its metadata (:func:`of`): the check, whether it is
written only when set, its place in SPEC section 4's order, the records it holds. The
record classes (:mod:`~loopkit.requests.models`, :mod:`~loopkit.requests.record`) are the
one list of their fields; :func:`rules`, :func:`written` and :func:`read` read them there.
"""

from __future__ import annotations

import math
from enum import StrEnum

from loopkit import clock
from loopkit.datarecord import fields
from loopkit.errors import BadInput

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from loopkit.datarecord import Field

    Check = Callable[[Any], str | None]  # None when fine, else what it must be


def text(value: Any) -> str | None:
    return None if isinstance(value, str) else "a string"


def maybe(check: Check) -> Check:
    def maybe(value: Any) -> str | None:
        problem = check(value)
        return None if value is None or problem is None else f"{problem} or null"

    return maybe


def time(value: Any) -> str | None:
    if not isinstance(value, str):
        return "an ISO-8601 time string"
    try:
        clock.parse_iso(value)
    except ValueError:
        return "an ISO-8601 time such as 2026-12-03T09:00:00Z"
    return None


def https(value: Any) -> str | None:
    ok = isinstance(value, str) and value.startswith("https://")
    return None if ok else "an https:// URL"


def whole_number(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53
    return None if ok else "a whole number ≥ 0"


def number(value: Any) -> str | None:
    ok = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value < 10**9
    )
    return None if ok else "a finite number ≥ 0"


def flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def one_of(allowed: Iterable[str]) -> Check:
    """One of ``allowed`` (an enum's values, say), as written."""
    names = tuple(str(a) for a in allowed)

    def one_of(value: Any) -> str | None:
        return None if isinstance(value, str) and value in names else "one of " + ", ".join(names)

    return one_of


def obj(fields: dict[str, Check] | None = None, values: Check | None = None) -> Check:
    """An object whose listed ``fields`` (when present) pass their checks."""

    def check(value: Any) -> str | None:
        if not isinstance(value, dict):
            return "an object"
        for key, sub in (fields or {}).items():
            if key in value and (problem := sub(value[key])):
                return f"an object whose {key!r} is {problem}"
        if values is not None:
            for key, item in value.items():
                if problem := values(item):
                    return f"an object whose {key!r} is {problem}"
        return None

    return check


def list_of(item: Check) -> Check:
    def check(value: Any) -> str | None:
        if not isinstance(value, list):
            return "a list"
        for number, one in enumerate(value):
            if problem := item(one):
                return f"a list whose item {number + 1} is {problem}"
        return None

    return check


OPT_TEXT = maybe(text)
OPT_FLAG = maybe(flag)


def whole(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**53
    return None if ok else "a whole number"


def either(*checks: Check) -> Check:
    """Passes when one of ``checks`` does; the problem names what each wanted."""

    def either(value: Any) -> str | None:
        problems = [problem for check in checks if (problem := check(value))]
        return None if len(problems) < len(checks) else " or ".join(problems)

    return either


OPT_ID = maybe(either(whole, text))

# --- what a field says of itself -------------------------------------------------------------

SHAPE = "shape"  # its check: None when fine, else what it must be
WHEN_SET = "when_set"  # written only when set (not None, false or empty)
ORDER = "order"  # its place in SPEC section 4's order of a record's keys
ITEMS = "items"  # a list of these records (their ``from_dict``)
ONE = "one"  # one such record, or null


def of(
    check: Check,
    *,
    when_set: bool = False,
    order: int | None = None,
    items: type | None = None,
    one: type | None = None,
) -> dict[str, Any]:
    """A field's metadata: how it is checked at load and written at save."""
    meta: dict[str, Any] = {SHAPE: check}
    if when_set:
        meta[WHEN_SET] = True
    if order is not None:
        meta[ORDER] = order
    if items is not None:
        meta[ITEMS] = items
    if one is not None:
        meta[ONE] = one
    return meta


def rules(cls: type) -> dict[str, Check]:
    """Every field of ``cls`` that declares a shape, and its check (in field order)."""
    return {f.name: f.metadata[SHAPE] for f in fields(cls) if SHAPE in f.metadata}


def as_object(cls: type) -> Check:
    """An object whose fields have the shapes ``cls`` declares."""
    return obj(rules(cls))


def _ordered(cls: type) -> list[Field]:
    found = [f for f in fields(cls) if f.name != "extra"]
    last = len(found)
    return sorted(found, key=lambda f: f.metadata.get(ORDER, last))


def _plain(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, StrEnum):
        return value.value
    return value


def written(record: Any) -> dict[str, Any]:
    """``record`` as its JSON object: its fields in their declared order (SPEC's first), one
    written only when set left out when it is not, nested records as theirs; then the keys
    it did not know (``extra``) unchanged."""
    data: dict[str, Any] = {}
    for f in _ordered(type(record)):
        value = getattr(record, f.name)
        if f.metadata.get(WHEN_SET) and value in (None, False, [], {}, ()):
            continue
        data[f.name] = _plain(value)
    data.update(record.extra)
    return data


def read(cls: type, data: dict[str, Any], source: str) -> dict[str, Any]:
    """The constructor's keywords of ``cls`` from ``data`` (its shape checked before):
    nested records built, a list or object given as null left to its default, and ``extra``
    — the keys ``cls`` does not know."""
    known = {f.name: f for f in fields(cls) if f.name != "extra"}
    values: dict[str, Any] = {}
    for name, value in data.items():
        f = known.get(name)
        if f is None:
            continue
        if value is None and f.default_factory in (list, dict, tuple):
            continue
        if ITEMS in f.metadata:
            value = [f.metadata[ITEMS].from_dict(item) for item in value]
        elif ONE in f.metadata and isinstance(value, dict):
            value = f.metadata[ONE].from_dict(value)
        elif f.default_factory is tuple:
            value = tuple(value)
        values[name] = value
    values["extra"] = {k: v for k, v in data.items() if k not in known}
    return values


def check(data: dict[str, Any], source: str, rules: dict[str, Check]) -> None:
    """Raise ``BadInput`` naming ``source`` and the first field of the wrong shape (of
    ``rules``' fields; one absent is not looked at)."""
    for name, rule in rules.items():
        if name in data and (problem := rule(data[name])):
            raise BadInput(
                f"{source}: field {name!r} must be {problem}; fix the file or restore it "
                "from a backup"
            )


VERSION: dict[str, Check] = {"schema_version": maybe(whole_number)}
# Version 1's lifecycle fields, checked before they are migrated (loopkit.requests.migrate).
V1_LIFECYCLE: dict[str, Check] = {
    "adopted": OPT_FLAG,
    "raised_block": OPT_FLAG,
    "block_pending": OPT_FLAG,
    "not_raised": OPT_FLAG,
    "joined_block": OPT_TEXT,
}
