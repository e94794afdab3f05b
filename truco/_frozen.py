"""Fast construction for the engine's hot frozen dataclasses.

A frozen dataclass's generated `__init__` stores every field through `object.__setattr__`, and
`dataclasses.replace` goes through that `__init__` again: together they were most of the time of
a random playout. The helpers here generate the same code dataclasses would (names, defaults,
order), but store through the slots' own descriptors, which is several times cheaper. The
classes stay frozen dataclasses: equality, hashing, repr and the frozen `__setattr__` are
untouched. Only classes without `__post_init__` may use them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_MISSING = dataclasses.MISSING


def _fields(cls: type[Any]) -> tuple[dataclasses.Field[Any], ...]:
    if not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} must be a slots dataclass")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has __post_init__, which the fast __init__ would skip")
    return dataclasses.fields(cls)


def _namespace(cls: type[Any], fields: tuple[dataclasses.Field[Any], ...]) -> dict[str, Any]:
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_keep": _MISSING}
    for field in fields:
        namespace[f"_set_{field.name}"] = cls.__dict__[field.name].__set__
        if field.default is not _MISSING:
            namespace[f"_default_{field.name}"] = field.default
        if field.default_factory is not _MISSING:
            namespace[f"_factory_{field.name}"] = field.default_factory
    return namespace


def fast_init(cls: type[T]) -> type[T]:
    """Class decorator (above @dataclass): replace `__init__` by a descriptor-storing one."""
    fields = _fields(cls)
    params = ["self"]
    body = []
    for field in fields:
        name = field.name
        if not field.init:
            if field.default_factory is not _MISSING:
                body.append(f"    _set_{name}(self, _factory_{name}())")
            elif field.default is not _MISSING:
                body.append(f"    _set_{name}(self, _default_{name})")
            continue
        if field.default is not _MISSING:
            params.append(f"{name}=_default_{name}")
        elif field.default_factory is not _MISSING:
            raise TypeError(f"{cls.__name__}.{name}: init fields with a factory are not supported")
        else:
            params.append(name)
        body.append(f"    _set_{name}(self, {name})")
    source = f"def __init__({', '.join(params)}) -> None:\n" + "\n".join(body or ["    pass"])
    namespace = _namespace(cls, fields)
    exec(source, namespace)  # the same technique dataclasses uses to build __init__
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    setattr(cls, "__init__", init)  # noqa: B010  (mypy forbids assigning a method directly)
    return cls


def evolver(cls: type[T]) -> Callable[..., T]:
    """A `dataclasses.replace(obj, **changes)` for `cls` that skips `__init__`.

    Fields with init=False get a fresh default (as `replace` would): they are derived caches.
    """
    fields = _fields(cls)
    params = ["obj"]
    body = ["    new = _new(_cls)"]
    for field in fields:
        name = field.name
        if not field.init:
            if field.default_factory is not _MISSING:
                body.append(f"    _set_{name}(new, _factory_{name}())")
            else:
                body.append(f"    _set_{name}(new, _default_{name})")
            continue
        params.append(f"{name}=_keep")
        body.append(f"    _set_{name}(new, obj.{name} if {name} is _keep else {name})")
    body.append("    return new")
    source = f"def evolve({params[0]}, *, {', '.join(params[1:])}):\n" + "\n".join(body)
    namespace = _namespace(cls, fields)
    exec(source, namespace)
    evolve: Callable[..., T] = namespace["evolve"]
    evolve.__qualname__ = f"evolve_{cls.__qualname__}"
    return evolve
