"""Old keyword names that public functions still accept, with a ``DeprecationWarning``."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def renamed_keyword(old: str, new: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Makes a function whose parameter ``old`` was renamed to ``new`` accept ``old=`` still:
    the value is passed as ``new=``, with a ``DeprecationWarning``. Giving both is a
    ``TypeError``."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            if old in kwargs:
                name = getattr(fn, "__qualname__", repr(fn))
                if new in kwargs:
                    raise TypeError(f"{name}() got both {old}= and {new}=; pass {new}= only")
                warnings.warn(
                    f"{name}({old}=...) is deprecated: pass {new}=...",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return call

    return wrap
