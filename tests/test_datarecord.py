"""``loopkit.datarecord`` behaves as :mod:`dataclasses` does, for the part loopkit uses.

Hypothesis draws class shapes (fields with and without defaults and factories, ``repr=`` and
``compare=`` flags, frozen, slots, a class's own ``__eq__``/``__hash__``, a ``ClassVar``) and
the calls made on them; each shape is built twice, once by ``dataclasses`` and once by
``record``, and every outcome — a value's repr, or the exception's type and message — must be
the same.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import subprocess
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit import datarecord as rec
from loopkit.datarecord import FrozenInstanceError, field, fields, record, replace


class Flavour:
    """One way to make a record: dataclasses' or loopkit's, each in a module of its own so
    that pickle finds its classes, named alike in both: ``C`` (the shape drawn) and
    ``Inner`` (a frozen record nested in values)."""

    def __init__(self, name: str, decorate: Callable[..., Any], make_field: Callable[..., Any],
                 api: Any) -> None:  # fmt: skip
        self.module = types.ModuleType(name)
        self.module.ClassVar = ClassVar  # type: ignore[attr-defined]  # as `from typing import`
        sys.modules[name] = self.module
        self.decorate, self.field, self.api = decorate, make_field, api
        body = {"__module__": name, "__qualname__": "Inner",
                "__annotations__": {"n": "int", "tags": "list[str]"},
                "tags": make_field(default_factory=list)}  # fmt: skip
        self.inner = decorate(frozen=True)(type("Inner", (), body))
        self.module.Inner = self.inner  # type: ignore[attr-defined]


DC = Flavour("_record_twins_dataclasses", dataclasses.dataclass, dataclasses.field, dataclasses)
REC = Flavour("_record_twins_record", record, field, rec)

# A value is drawn as a plan, then made in each flavour (a nested record is its own flavour's).
values = st.recursive(
    st.none() | st.integers(-3, 3) | st.text("ab", max_size=2) | st.just(float("nan")),
    lambda inner: (
        st.lists(inner, max_size=2).map(lambda v: ("list", v))
        | st.lists(inner, max_size=2).map(lambda v: ("tuple", v))
        | st.dictionaries(st.text("xy", max_size=1), inner, max_size=2).map(lambda v: ("dict", v))
        | st.integers(0, 2).map(lambda n: ("inner", n))
    ),
    max_leaves=4,
)


def make(plan: Any, flavour: Flavour) -> Any:
    if not isinstance(plan, tuple):
        return plan
    kind, inside = plan
    if kind == "inner":
        return flavour.inner(inside, ["t"] * inside)
    if kind == "dict":
        return {k: make(v, flavour) for k, v in inside.items()}
    made = [make(v, flavour) for v in inside]
    return made if kind == "list" else tuple(made)


NAMES = ("a", "b", "c", "d", "e", "f")
fields_ = st.tuples(
    st.sampled_from(["required", "default", "factory", "mutable default"]),
    values,
    st.booleans(),  # repr
    st.booleans(),  # compare
    st.sampled_from(["int", "list[int]", "str | None"]),
)
shapes = st.fixed_dictionaries(
    {
        "fields": st.lists(fields_, max_size=len(NAMES)),
        "frozen": st.booleans(),
        "slots": st.booleans(),
        "doc": st.booleans(),
        "own": st.sampled_from([None, "eq", "hash", "both"]),
        "classvar": st.booleans(),
    }
)


def build(shape: dict[str, Any], flavour: Flavour) -> Any:
    body: dict[str, Any] = {"__module__": flavour.module.__name__, "__qualname__": "C"}
    notes: dict[str, str] = {}
    if shape["doc"]:
        body["__doc__"] = "A class of its own words."
    if shape["classvar"]:
        notes["shared"] = "ClassVar[int]"
        body["shared"] = 7
    for name, (kind, value, shown, compared) in zip(NAMES, shape["fields"], strict=False):
        notes[name] = "int"
        flags = {"repr": shown, "compare": compared}
        if kind == "default":
            body[name] = flavour.field(default=make(value, flavour), **flags)
        elif kind == "factory":
            body[name] = flavour.field(default_factory=lambda v=value: make(v, flavour), **flags)
        elif kind == "mutable default":
            body[name] = [] if shown else {}  # dataclasses refuses both
        elif not (shown and compared):
            body[name] = flavour.field(**flags)
    body["__annotations__"] = notes
    if shape["own"] in ("eq", "both"):
        body["__eq__"] = lambda self, other: isinstance(other, type(self))
    if shape["own"] in ("hash", "both"):
        body["__hash__"] = lambda self: 7
    made = flavour.decorate(frozen=shape["frozen"], slots=shape["slots"])(type("C", (), body))
    flavour.module.C = made  # type: ignore[attr-defined]
    return made


def outcome(call: Callable[[], Any]) -> tuple[str, str]:
    """What a call gives, comparable across flavours: its value's repr, or its error."""
    try:
        value = call()
    except Exception as error:  # (the whole point: the same error either way)
        return ("error", f"{type(error).__name__}: {error}")
    return ("value", repr(value))


def twins(shape: dict[str, Any], step: Callable[[Flavour, Any], Any]) -> tuple[str, str]:
    """``step`` on each flavour's class; the outcomes must agree, and the shared one is
    returned."""
    both = []
    for flavour in (DC, REC):
        made = outcome(lambda f=flavour: build(shape, f))
        if made[0] == "error":
            both.append(made)
            continue
        cls = flavour.module.C
        both.append(outcome(lambda f=flavour, c=cls: step(f, c)))
    assert both[0] == both[1], shape
    return both[0]


calls = st.fixed_dictionaries(
    {
        "positional": st.lists(values, max_size=len(NAMES) + 1),
        "keywords": st.dictionaries(st.sampled_from([*NAMES, "zz"]), values, max_size=3),
        "changes": st.dictionaries(st.sampled_from([*NAMES, "zz"]), values, max_size=2),
        "attribute": st.sampled_from([*NAMES, "zz"]),
        "other": st.lists(values, max_size=len(NAMES)),
    }
)


@settings(max_examples=400, deadline=None)
@given(shape=shapes, call=calls)
def test_a_record_behaves_as_its_dataclass_twin(
    shape: dict[str, Any], call: dict[str, Any]
) -> None:
    def new(flavour: Flavour, cls: Any, plans: list[Any], keywords: dict[str, Any]) -> Any:
        args = [make(p, flavour) for p in plans]
        return cls(*args, **{k: make(v, flavour) for k, v in keywords.items()})

    def instance(flavour: Flavour, cls: Any) -> Any:
        return new(flavour, cls, call["positional"], call["keywords"])

    # The class itself: its fields, defaults, docstring, match_args, hashability.
    def described(flavour: Flavour, cls: Any) -> Any:
        found = [(f.name, f.repr, f.compare, f.default_factory is flavour.api.MISSING)
                 for f in flavour.api.fields(cls)]  # fmt: skip
        return found, cls.__doc__, cls.__match_args__, cls.__hash__ is None, cls.__qualname__

    twins(shape, described)
    # Construction, by position and keyword, with its errors; the repr.
    made = twins(shape, instance)
    if made[0] == "error":
        return
    twins(shape, lambda f, c: repr(instance(f, c)))
    # ==, against a twin made alike, one made otherwise and something else; hash.
    twins(shape, lambda f, c: instance(f, c) == instance(f, c))
    twins(shape, lambda f, c: instance(f, c) == new(f, c, call["other"], {}))
    twins(shape, lambda f, c: (instance(f, c) == 1, instance(f, c) != "C"))
    twins(shape, lambda f, c: instance(f, c) == instance(f, type("Sub", (c,), {})))
    twins(shape, lambda f, c: hash(instance(f, c)))
    # replace, asdict (json: nan is not nan, so the dicts themselves need not be ==).
    twins(shape, lambda f, c: f.api.replace(instance(f, c), **{
        k: make(v, f) for k, v in call["changes"].items()}))  # fmt: skip
    twins(shape, lambda f, c: json.dumps(f.api.asdict(instance(f, c)), default=repr))
    # A field set and deleted: frozen refuses both. A frozen slotted class sets no other
    # name (dataclasses' setattr there fails on super(); record refuses as it should).
    if (
        not (shape["frozen"] and shape["slots"])
        or call["attribute"] in NAMES[: len(shape["fields"])]
    ):

        def assigned(f: Flavour, c: Any) -> Any:
            it = instance(f, c)
            setattr(it, call["attribute"], 5)
            delattr(it, call["attribute"])
            return it

        twins(shape, assigned)
    # pickle and copy give an equal record (nan aside: compared by repr).
    twins(shape, lambda f, c: pickle.loads(pickle.dumps(instance(f, c))))
    twins(shape, lambda f, c: copy.copy(instance(f, c)))
    twins(shape, lambda f, c: copy.deepcopy(instance(f, c)))
    twins(shape, lambda f, c: pickle.loads(pickle.dumps(it := instance(f, c))) == it)


def test_a_frozen_slotted_record_refuses_any_new_attribute() -> None:
    @record(frozen=True, slots=True)
    class Point:
        x: int

    point = Point(1)
    for name in ("x", "y"):
        with pytest.raises(FrozenInstanceError):
            setattr(point, name, 2)
        with pytest.raises(FrozenInstanceError):
            delattr(point, name)
    assert not hasattr(point, "__dict__")
    assert isinstance(FrozenInstanceError(), AttributeError)


def test_a_slotted_record_keeps_its_methods_and_attributes() -> None:
    @record(frozen=True, slots=True)
    class Span:
        """Two ends."""

        start: int
        end: int = 0

        @property
        def size(self) -> int:
            return self.end - self.start

        @classmethod
        def empty(cls) -> Span:
            return cls(0)

        @staticmethod
        def unit() -> int:
            return 1

        def moved(self, by: int) -> Span:
            return replace(self, start=self.start + by, end=self.end + by)

    span = Span(1, 4)
    assert (span.size, Span.empty(), Span.unit(), span.moved(1)) == (3, Span(0), 1, Span(2, 5))
    assert Span.__doc__ == "Two ends."
    assert Span.__module__ == __name__
    assert Span.__qualname__.endswith("<locals>.Span")
    assert Span.__slots__ == ("start", "end")  # type: ignore[attr-defined]
    assert [f.name for f in fields(span)] == ["start", "end"]
    assert rec.is_record(span) and rec.is_record(Span) and not rec.is_record(1)


def test_a_subclass_has_its_bases_fields_first() -> None:
    def family(decorate: Callable[..., Any], make_field: Callable[..., Any]) -> Any:
        @decorate(frozen=True)
        class Base:
            a: int
            b: str = "b"

        @decorate(frozen=True)
        class Child(Base):
            c: list[int] = make_field(default_factory=list)
            b: str = "child"

        return Child

    ours, theirs = family(record, field), family(dataclasses.dataclass, dataclasses.field)
    assert [f.name for f in fields(ours)] == [f.name for f in dataclasses.fields(theirs)]
    assert repr(ours(1)) == repr(theirs(1))
    assert ours(1) == ours(1, "child", []) and hash(ours(1, c=())) == hash(ours(1, "child", ()))
    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen"):

        @record
        class Thawed(ours):  # type: ignore[misc,valid-type]
            d: int = 0


def test_the_misuses_dataclasses_refuses() -> None:
    with pytest.raises(ValueError, match="cannot specify both default and default_factory"):
        field(default=1, default_factory=list)
    with pytest.raises(TypeError, match="'x' is a field but has no type annotation"):
        record(type("C", (), {"x": field(default=1)}))
    with pytest.raises(TypeError, match="must be called with a record type or instance"):
        fields(1)
    with pytest.raises(TypeError, match="replace"):
        replace(1)
    with pytest.raises(TypeError, match="asdict"):
        rec.asdict(REC.inner)


def test_importing_record_imports_no_dataclasses_inspect_or_typing() -> None:
    probe = "import sys, loopkit.datarecord; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)  # fmt: skip
    loaded = set(done.stdout.split())
    assert "loopkit.datarecord" in loaded
    assert not {"dataclasses", "inspect", "typing", "copy", "re"} & loaded


def test_a_classvar_is_no_field() -> None:
    @record
    class Shape:
        sides: ClassVar[int] = 4
        plain: typing.ClassVar[str] = "p"
        name: str
        classvariant: ClassVarious = 1  # type: ignore[name-defined]  # noqa: F821

    assert [f.name for f in fields(Shape)] == ["name", "classvariant"]
    assert (Shape.sides, Shape("square").classvariant) == (4, 1)
