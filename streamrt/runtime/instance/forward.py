"""Forward: an App method that is a method of one of its parts, with the part's signature.

``app.stream(...)`` is ``app.builder.stream(...)`` and ``app.metadata_for_key(...)`` is
``app.queries.metadata_for_key(...)``: declared once as ``stream = Forward("builder",
StreamsBuilder.stream)``, so the App repeats neither the part's parameters nor its docstring,
and type checkers see the part's exact signature.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MethodType
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

__all__ = ("Forward",)

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class Forward(Generic[T, P, R]):
    """A descriptor: on an instance, ``method`` bound to the instance's attribute ``part``."""

    def __init__(self, part: str, method: Callable[Concatenate[T, P], R]) -> None:
        self.part = part
        self.method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Forward[T, P, R]: ...

    @overload
    def __get__(self, obj: object, owner: type[Any]) -> Callable[P, R]: ...

    def __get__(self, obj: object | None, owner: type[Any]) -> Forward[T, P, R] | Callable[P, R]:
        if obj is None:
            return self
        bound: Callable[P, R] = MethodType(self.method, getattr(obj, self.part))
        return bound
