"""The real TensorFlowOnSpark (the PyPI wheel the bench compares against), importable in the
project's venv as installed by requirements-dev.txt, with no shim: `python -m hydrofeed.bench
spark` runs it as its baseline. TFoS 2.2.5 imports `pkg_resources`, which setuptools 81 and
later no longer ship; before the pin the import failed (`No module named 'pkg_resources'`) and
nothing in the tests noticed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_the_real_tensorflowonspark_imports() -> None:
    code = (
        "import tensorflowonspark, tensorflowonspark.TFCluster, tensorflowonspark.TFNode\n"
        "print(tensorflowonspark.__version__, tensorflowonspark.__file__)\n"
    )
    # A fresh interpreter: nothing of hydrofeed's (its compat package) on the path first.
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       cwd=str(Path(sys.executable).parent))
    assert r.returncode == 0, r.stderr[-3000:]
    version, path = r.stdout.split()[-2:]
    assert version == "2.2.5", r.stdout
    assert "site-packages" in path and "hydrofeed" not in path, path
