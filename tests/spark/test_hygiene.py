"""What Spark nodes leave behind and print on a good run: no throwaway model export left in
$TMPDIR, no runpy warning in every trainer."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from hydrofeed.spark.node import NodeContext


class _Model:
    """Exports like a Keras 3 model: writes a file into the target directory."""

    def __init__(self) -> None:
        self.targets: list[str] = []

    def export(self, target: str) -> None:
        self.targets.append(target)
        with open(os.path.join(target, "saved_model.pb"), "wb") as f:
            f.write(b"x")


def test_non_chief_model_export_leaves_nothing_in_tmpdir(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spec = {"chief": ["h:1"], "worker": ["h:2"]}
    worker = NodeContext(1, "worker", 0, spec, "file://", str(tmp_path))
    m = _Model()
    worker.export_saved_model(m, str(tmp_path / "export"))
    assert m.targets and m.targets[0].startswith(str(tmp_path))
    assert [p for p in os.listdir(tmp_path) if p.startswith("hydrofeed-worker-model-")] == []
    chief = NodeContext(0, "chief", 0, spec, "file://", str(tmp_path))
    (tmp_path / "export").mkdir()
    chief.export_saved_model(m, str(tmp_path / "export"))
    assert (tmp_path / "export" / "saved_model.pb").exists()


def test_compat_non_chief_model_export_leaves_nothing_in_tmpdir(tmp_path, monkeypatch) -> None:
    from hydrofeed.compat.tensorflowonspark import compat

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    compat.export_saved_model(_Model(), str(tmp_path / "export"), is_chief=False)
    assert os.listdir(tmp_path) == []


def test_trainer_module_runs_without_a_runpy_warning() -> None:
    """The supervisor starts trainers with `python -m hydrofeed.spark.trainer`: importing the
    package must not import that module first (runpy then warns in every trainer)."""
    r = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c",
         "import sys, runpy; sys.argv = ['trainer']\n"
         "import hydrofeed.spark\n"
         "assert 'hydrofeed.spark.trainer' not in sys.modules, 'imported by the package'\n"],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 0, r.stderr[-2000:]
