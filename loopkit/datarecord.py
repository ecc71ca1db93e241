"""Records: the part of :mod:`dataclasses` loopkit uses, without its start-up cost (SPEC §20).

Why not ``dataclasses``: importing it costs ~10 ms here, because it imports ``inspect`` (and
so ``ast``, ``dis``, ``tokenize``, …) — ``valgrind --tool=cachegrind --cache-sim=no python -c
'import dataclasses'`` counts 110 M instructions against 38 M for ``python -c pass`` — and
every ``@dataclass`` then writes its ``__init__``, ``__repr__`` and ``__eq__`` as source text
and ``exec``\\ s it: 0.3-1 ms a class (``python -X importtime -c 'import loopkit.config'``
showed 6-8 ms for its eight). loopkit has some eighty of them, and the everyday commands must
start in at most four times ``python -c pass``.

Here the methods are closures over a per-class tuple of fields, so decorating a class costs
microseconds, and this module imports nothing (``typing`` only for the type checker).

The behaviour is dataclasses' for what loopkit uses — ``@record``, ``frozen=``, ``slots=``,
:func:`field` with ``default``, ``default_factory``, ``repr``, ``compare`` and
``metadata``, :func:`fields`, :func:`replace`, :func:`asdict` — down to the error messages
and the ``repr``;
``tests/test_datarecord.py`` checks it against :mod:`dataclasses` on random class shapes. Not
supported: ``order``, ``init=False`` fields, ``kw_only``, ``InitVar``, ``__post_init__``.
"""

from __future__ import annotations

from _operator import attrgetter
from _thread import get_ident

TYPE_CHECKING = False
if not TYPE_CHECKING:  # at run time, the type checker's decorators do nothing

    def overload(function):
        return function

    def dataclass_transform(**_):
        return overload

else:
    from collections.abc import Callable, Mapping  # noqa: TC003 (ruff reads no `else` of the flag)
    from typing import Any, TypeVar, dataclass_transform, overload  # noqa: TC003

    _T = TypeVar("_T")


_FIELDS = "__record_fields__"
_FROZEN = "__record_frozen__"


class FrozenInstanceError(AttributeError):
    """An assignment to (or deletion of) a field of a frozen record."""


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # "no default", as dataclasses.MISSING


class Field:
    """One field of a record: what :func:`fields` returns."""

    __slots__ = ("compare", "default", "default_factory", "metadata", "name", "repr", "type")

    def __init__(
        self,
        default: Any,
        default_factory: Any,
        repr: bool,
        compare: bool,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.name: str = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare
        self.metadata: Mapping[str, Any] = _EMPTY if metadata is None else dict(metadata)

    def __repr__(self) -> str:
        return (
            f"Field(name={self.name!r},type={self.type!r},default={self.default!r},"
            f"default_factory={self.default_factory!r},repr={self.repr!r},"
            f"compare={self.compare!r},metadata={self.metadata!r})"
        )


_EMPTY: Mapping[str, Any] = {}


@overload
def field(
    *,
    default: _T,
    repr: bool = True,
    compare: bool = True,
    metadata: Mapping[str, Any] | None = None,
) -> _T: ...
@overload
def field(
    *,
    default_factory: Callable[[], _T],
    repr: bool = True,
    compare: bool = True,
    metadata: Mapping[str, Any] | None = None,
) -> _T: ...
@overload
def field(
    *, repr: bool = True, compare: bool = True, metadata: Mapping[str, Any] | None = None
) -> Any: ...
def field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    repr: bool = True,
    compare: bool = True,
    metadata: Mapping[str, Any] | None = None,
) -> Any:
    """A field with a default, a factory called for each new record, or left out of
    ``repr`` or of ``==`` and ``hash``; ``metadata``: what the field says of itself to code
    that reads records generically (how it is checked and written, as dataclasses' own)."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, repr, compare, metadata)


@overload
@dataclass_transform(field_specifiers=(field,), frozen_default=False)
def record(cls: type[_T], /) -> type[_T]: ...
@overload
@dataclass_transform(field_specifiers=(field,), frozen_default=False)
def record(*, frozen: bool = False, slots: bool = False) -> Callable[[type[_T]], type[_T]]: ...
def record(
    cls: type[_T] | None = None, /, *, frozen: bool = False, slots: bool = False
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """``@dataclass``, ``@dataclass(frozen=True, slots=True)``: ``__init__``, ``__repr__``,
    ``__eq__``, ``__hash__`` (frozen) and ``__match_args__`` from the annotated fields."""

    def wrap(cls: type[_T]) -> type[_T]:
        return _build(cls, frozen, slots)

    return wrap if cls is None else wrap(cls)


def fields(obj: Any) -> tuple[Field, ...]:
    """The fields of a record or record class, in order."""
    found: tuple[Field, ...] | None = getattr(obj, _FIELDS, None)
    if found is None:
        raise TypeError("must be called with a record type or instance")
    return found


def is_record(obj: object) -> bool:
    """Whether ``obj`` is a record class or an instance of one."""
    return hasattr(obj if isinstance(obj, type) else type(obj), _FIELDS)


def replace(obj: _T, /, **changes: Any) -> _T:
    """A copy of the record ``obj`` with ``changes``; an unknown name is a TypeError."""
    if isinstance(obj, type) or not hasattr(obj, _FIELDS):
        raise TypeError("replace() should be called on record instances")
    for f in getattr(obj, _FIELDS):
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


def asdict(obj: object) -> dict[str, Any]:
    """The record as a dict, recursing into records, lists, tuples and dicts and deep-copying
    every other value, as :func:`dataclasses.asdict` does."""
    if isinstance(obj, type) or not hasattr(obj, _FIELDS):
        raise TypeError("asdict() should be called on record instances")
    import copy  # only here: most commands never call it

    made: dict[str, Any] = _asdict(obj, copy.deepcopy)
    return made


def _asdict(obj: Any, deepcopy: Callable[[Any], Any]) -> Any:
    if hasattr(type(obj), _FIELDS):
        return {f.name: _asdict(getattr(obj, f.name), deepcopy) for f in fields(obj)}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple: the same type back
        return type(obj)(*[_asdict(v, deepcopy) for v in obj])
    if isinstance(obj, list | tuple):
        return type(obj)(_asdict(v, deepcopy) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((_asdict(k, deepcopy), _asdict(v, deepcopy)) for k, v in obj.items())
    return deepcopy(obj)


class _Slotted:
    __slots__ = ("slot",)


_MEMBER = type(_Slotted.__dict__["slot"])  # a slot on a class: no default


def _is_classvar(annotation: object) -> bool:
    """``ClassVar[...]``, written (a string, under ``from __future__ import annotations``) or
    evaluated: a class attribute, not a field."""
    text = annotation.strip() if isinstance(annotation, str) else repr(annotation)
    name = text.partition("[")[0].strip()
    return name in ("ClassVar", "typing.ClassVar")


def _build(cls: type[_T], frozen: bool, slots: bool) -> type[_T]:
    own = cls.__dict__
    found: dict[str, Field] = {}
    based = False
    frozen_base = False
    for base in cls.__mro__[-1:0:-1]:
        inherited = base.__dict__.get(_FIELDS)
        if inherited is not None:
            based = True
            frozen_base = frozen_base or base.__dict__[_FROZEN]
            for f in inherited:
                found[f.name] = f
    annotations: dict[str, Any] = own.get("__annotations__", {})
    for name, annotation in annotations.items():
        if _is_classvar(annotation):
            continue
        default = getattr(cls, name, MISSING)
        if isinstance(default, Field):
            f = default
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        else:
            if isinstance(default, _MEMBER):
                default = MISSING
            f = Field(default, MISSING, True, True)
        f.name, f.type = name, annotation
        if f.default is not MISSING and f.default.__class__.__hash__ is None:
            raise ValueError(
                f"mutable default {type(f.default)} for field {name} is not allowed: "
                "use default_factory"
            )
        found[name] = f
    for name, value in own.items():
        if isinstance(value, Field) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    if based and frozen_base != frozen:
        raise TypeError(
            "cannot inherit non-frozen dataclass from a frozen one"
            if frozen_base
            else "cannot inherit frozen dataclass from a non-frozen one"
        )
    every = tuple(found.values())
    defaulted = False
    for f in every:
        if f.default is not MISSING or f.default_factory is not MISSING:
            defaulted = True
        elif defaulted:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")

    class_hash = own.get("__hash__", MISSING)
    explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in own))
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in own:
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    if not getattr(cls, "__doc__", None):
        cls.__doc__ = cls.__name__ + _signature(every)
    if slots:
        cls = _with_slots(cls, every)
    setattr(cls, _FIELDS, every)
    setattr(cls, _FROZEN, frozen)
    names = tuple(f.name for f in every)
    compared = tuple(f.name for f in every if f.compare)
    methods: dict[str, Any] = {
        "__init__": _init(every, frozen),
        "__repr__": _repr(tuple(f.name for f in every if f.repr)),
        "__eq__": _eq(compared),
    }
    if frozen:
        methods["__setattr__"], methods["__delattr__"] = _frozen(cls, names)
    if not explicit_hash:
        methods["__hash__"] = _hash(compared) if frozen else None
    for name, method in methods.items():
        if method is not None:
            method.__qualname__ = f"{cls.__qualname__}.{name}"
    methods["__match_args__"] = names
    if frozen and slots:  # pickle and copy: object's own state would setattr a frozen field
        methods["__getstate__"] = _getstate
        methods["__setstate__"] = _setstate
    for name, value in methods.items():
        if name not in own or name == "__hash__":
            setattr(cls, name, value)
    return cls


def _signature(every: tuple[Field, ...]) -> str:
    """The text ``inspect.signature`` gives for dataclasses' ``__init__``."""
    params = []
    for f in every:
        text = f"{f.name}: {f.type!r}" if isinstance(f.type, str) else f"{f.name}: {f.type}"
        if f.default is not MISSING:
            text += f" = {f.default!r}"
        elif f.default_factory is not MISSING:
            text += " = <factory>"
        params.append(text)
    return f"({', '.join(params)})"


def _with_slots(cls: type[_T], every: tuple[Field, ...]) -> type[_T]:
    """A new class with ``__slots__`` (a class's slots cannot be added after it is made)."""
    if "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__} already specifies __slots__")
    inherited: set[str] = set()
    for base in cls.__mro__[1:-1]:
        declared = base.__dict__.get("__slots__", ())
        inherited.update((declared,) if isinstance(declared, str) else declared)
    body = dict(cls.__dict__)
    body["__slots__"] = tuple(f.name for f in every if f.name not in inherited)
    for f in every:
        body.pop(f.name, None)
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    made: type[_T] = type(cls)(cls.__name__, cls.__bases__, body)  # type: ignore[misc]
    made.__qualname__ = cls.__qualname__
    return made


def _init(every: tuple[Field, ...], frozen: bool) -> Callable[..., None]:
    """``__init__(self, a, b=…)``, its arguments checked as Python checks a call's."""
    plan = tuple((f.name, f.default, f.default_factory) for f in every)
    index = {f.name: i for i, f in enumerate(every)}
    count = len(every)
    required = sum(1 for _, d, k in plan if d is MISSING and k is MISSING)  # the first ones
    assign = object.__setattr__ if frozen else setattr

    def __init__(self: object, /, *args: Any, **kwargs: Any) -> None:
        given = len(args)
        for key in kwargs:
            at = index.get(key)
            if at is None:
                name = __init__.__qualname__
                raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
            if at < given:
                name = __init__.__qualname__
                raise TypeError(f"{name}() got multiple values for argument '{key}'")
        if given > count:
            takes = f"from {required + 1} to {count + 1}" if required < count else f"{count + 1}"
            plural = "s" if required < count or count else ""
            raise TypeError(
                f"{__init__.__qualname__}() takes {takes} positional argument{plural} "
                f"but {given + 1} were given"
            )
        if given < required:
            missing = [name for name, _, _ in plan[given:required] if name not in kwargs]
            if missing:
                raise TypeError(_missing(__init__.__qualname__, missing))
        for at, (name, default, factory) in enumerate(plan):
            if at < given:
                assign(self, name, args[at])
            elif name in kwargs:
                assign(self, name, kwargs[name])
            elif factory is MISSING:
                assign(self, name, default)
            else:
                assign(self, name, factory())

    return __init__


def _missing(qualname: str, names: list[str]) -> str:
    """CPython's own message for missing arguments."""
    quoted = [repr(name) for name in names]
    if len(quoted) == 1:
        listed = quoted[0]
    elif len(quoted) == 2:
        listed = f"{quoted[0]} and {quoted[1]}"
    else:
        listed = ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
    plural = "s" if len(names) > 1 else ""
    return f"{qualname}() missing {len(names)} required positional argument{plural}: {listed}"


def _values(names: tuple[str, ...]) -> Callable[[object], tuple[Any, ...]]:
    """A function giving a record's values of ``names``, as a tuple."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        name = names[0]
        return lambda obj: (getattr(obj, name),)
    return lambda obj: ()


def _repr(names: tuple[str, ...]) -> Callable[[object], str]:
    running: set[tuple[int, int]] = set()
    values = _values(names)

    def __repr__(self: object) -> str:
        key = id(self), get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            shown = ", ".join([f"{n}={v!r}" for n, v in zip(names, values(self), strict=True)])
        finally:
            running.discard(key)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__


def _eq(names: tuple[str, ...]) -> Callable[[object, object], Any]:
    values = _values(names)

    def __eq__(self: object, other: object) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(names: tuple[str, ...]) -> Callable[[object], int]:
    values = _values(names)

    def __hash__(self: object) -> int:
        return hash(values(self))

    return __hash__


def _frozen(
    cls: type[Any], names: tuple[str, ...]
) -> tuple[Callable[[object, str, object], None], Callable[[object, str], None]]:
    def __setattr__(self: object, name: str, value: object) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: object, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__


def _getstate(self: object) -> list[Any]:
    """Pickling a frozen record with slots: the values in field order."""
    return [getattr(self, f.name) for f in fields(self)]


def _setstate(self: object, state: list[Any]) -> None:
    for f, value in zip(fields(self), state, strict=False):
        object.__setattr__(self, f.name, value)
