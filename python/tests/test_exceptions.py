"""hydrofeed.exceptions is the one module that holds every exception and warning class.

The classes made by the compiled module (``hydrofeed._native``) are re-exported as they are, so
``except hydrofeed.DataError`` catches what Rust raises; the Python-side ones are defined there
and nowhere else (their old modules import them).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import hydrofeed
import hydrofeed._native as native
import hydrofeed.exceptions as exc

PACKAGE = Path(hydrofeed.__file__).resolve().parent
SUFFIXES = ("Error", "Exception", "Warning")


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):  # Generic[...] and the like
        return _base_name(node.value)
    return ""


def _exception_classes() -> dict[str, list[str]]:
    """{class name: [module files defining it]} for every class in the package's .py files
    whose bases name an error, exception or warning class."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                _base_name(b).endswith(SUFFIXES) for b in node.bases
            ):
                found.setdefault(node.name, []).append(str(path.relative_to(PACKAGE)))
    return found


def _native_exceptions() -> dict[str, type[BaseException]]:
    return {
        name: obj
        for name in dir(native)
        if isinstance(obj := getattr(native, name), type) and issubclass(obj, BaseException)
    }


def test_every_exception_class_is_defined_in_exceptions_py_only() -> None:
    found = _exception_classes()
    assert found, "the scan found no exception class at all"
    elsewhere = {name: files for name, files in found.items() if files != ["exceptions.py"]}
    assert not elsewhere, f"exception classes defined outside hydrofeed/exceptions.py: {elsewhere}"
    # Every class it defines is public there.
    assert set(found) <= set(exc.__all__)


def test_exceptions_all_is_complete() -> None:
    names = set(exc.__all__)
    assert set(_native_exceptions()) <= names, "a native exception is not re-exported"
    for name in names:
        obj = getattr(exc, name)
        assert isinstance(obj, type) and issubclass(obj, BaseException), name


@pytest.mark.parametrize("name", sorted(exc.__all__))
def test_exception_hierarchy_and_top_level_export(name: str) -> None:
    cls = getattr(exc, name)
    if issubclass(cls, Warning):
        assert name.endswith("Warning")
    else:
        assert issubclass(cls, exc.HydrofeedError), f"{name} is not a HydrofeedError"
    assert getattr(hydrofeed, name) is cls, f"hydrofeed.{name} is not hydrofeed.exceptions.{name}"
    assert name in hydrofeed.__all__
    assert (cls.__doc__ or "").strip(), f"{name} has no docstring"


@pytest.mark.parametrize("name", sorted(_native_exceptions()))
def test_native_exceptions_are_the_native_objects(name: str) -> None:
    assert getattr(exc, name) is getattr(native, name)
    assert getattr(hydrofeed, name) is getattr(native, name)


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("hydrofeed.spark.cluster", "TrainerFailedError"),
        ("hydrofeed.spark.hub", "TransportError"),
        ("hydrofeed.spark.files", "FeedFilesError"),
        ("hydrofeed.spark", "TrainerFailedError"),
        ("hydrofeed.spark", "FeedFilesError"),
        ("hydrofeed.compat.tensorflowonspark.TFCluster", "TrainerFailedError"),
    ],
)
def test_old_import_locations_still_work(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is getattr(exc, name)


def test_python_side_exceptions_keep_their_bases() -> None:
    assert issubclass(exc.TrainerFailedError, RuntimeError)
    assert issubclass(exc.FeedFilesError, RuntimeError)
    assert issubclass(exc.TransportError, exc.PeerLostError)
    assert issubclass(exc.TransportError, ConnectionError)
    e = exc.TrainerFailedError(None, "rank 0 failed")
    assert str(e) == "rank 0 failed" and e.rank is None and e.log_tail == []


def test_native_errors_are_caught_by_the_exported_classes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(b"this is not a tfrecord file at all" * 10)
    with pytest.raises(hydrofeed.exceptions.DataError, match="bad.tfrecord"):
        list(hydrofeed.read(str(bad)))
