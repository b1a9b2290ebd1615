"""The wheel as a cluster user installs it: `make wheel`, then `pip install` of that one file
into a fresh virtualenv (its dependencies from the package index), used with nothing else set:
no `HYDROFEED_BIN`, no source checkout on the path, no Rust."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

# `make wheel` reuses the release build of `make build` / `make develop`; alone, it builds them.
pytestmark = pytest.mark.timeout(3600)

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")


@pytest.fixture(scope="module")
def wheel() -> Path:
    r = subprocess.run(["make", "-C", str(ROOT), "wheel"], capture_output=True, text=True,
                       timeout=3600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    built = re.findall(r"^hydrofeed wheel: (\S+\.whl)$", r.stdout, re.M)
    assert built, r.stdout[-2000:] + r.stderr[-2000:]
    return Path(built[-1])


@pytest.fixture(scope="module")
def packed_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """make-env.sh's archive of a venv with the wheel (and no extra), packed once for the tests
    that unpack or ship it: each takes it read-only."""
    archive = tmp_path_factory.mktemp("packed") / "hydrofeed-env.tar.gz"
    r = subprocess.run(["bash", str(CLUSTER / "make-env.sh"), str(wheel), ""],
                       env={**os.environ, "OUT": str(archive)}, capture_output=True, text=True,
                       timeout=900, cwd=archive.parent)
    assert r.returncode == 0, r.stderr[-3000:]
    return archive


def test_the_wheel_is_abi3_manylinux_and_carries_the_binary(wheel: Path) -> None:
    assert re.search(r"-cp311-abi3-manylinux_2_34_x86_64\.whl$", wheel.name), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert any(re.fullmatch(r"hydrofeed-[^/]+\.data/scripts/hydrofeed", n) for n in names), names
    assert "hydrofeed/_native.abi3.so" in names
    r = subprocess.run([sys.executable, "-m", "auditwheel", "show", str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())
    assert 'consistent with the following platform tag: "manylinux_2_34_x86_64"' in out, out


def test_a_fresh_venv_runs_the_cli_and_a_job(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True)
    py, bin_dir = env_dir / "bin/python", env_dir / "bin"
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    # Nothing of the build: a PATH with the venv and the system only, run from elsewhere.
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}

    def run(*args: str, timeout: float = 120) -> str:
        p = subprocess.run(list(args), capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=timeout)
        assert p.returncode == 0, f"{args}: {p.stdout[-2000:]}{p.stderr[-3000:]}"
        return p.stdout

    assert run("hydrofeed", "--version").startswith("hydrofeed ")
    run("hydrofeed", "gen", "--format", "parquet", "--rows", "3000", "--files", "3", "--out",
        "data")
    out = run("hydrofeed", "launch", "--workers", "2", "--input", "data", "--batch-size", "100",
              "--", "python", "-c",
              "import hydrofeed as hf; f = hf.DataFeed(); "
              "print('ROWS', sum(len(b) for b in f.batches()))", timeout=300)
    rows = [int(line.split()[-1]) for line in out.splitlines() if "ROWS" in line]
    assert sorted(rows) == [1500, 1500], out
    where = run("python", "-c", "import hydrofeed, hydrofeed._proc as p; "
                "print(hydrofeed.__file__); print(p.hydrofeed_bin())").split()
    assert where[0].startswith(str(env_dir)), where
    assert where[1] == str(bin_dir / "hydrofeed"), where


CLUSTER = ROOT / "examples/cluster"


def test_the_cluster_recipes_parse_and_name_what_exists() -> None:
    """examples/cluster: the spark-submit scripts are valid bash, name files that exist, and pass
    the example only options it has."""
    example = (ROOT / "examples/mnist_keras_files.py").read_text()
    for script in ("make-env.sh", "yarn-submit.sh", "k8s-submit.sh"):
        text = (CLUSTER / script).read_text()
        r = subprocess.run(["bash", "-n", str(CLUSTER / script)], capture_output=True, text=True)
        assert r.returncode == 0, f"{script}: {r.stderr}"
        if "mnist_keras_files.py" not in text:
            continue
        app = text.split("mnist_keras_files.py", 1)[1]
        for flag in re.findall(r"--(\w+)", app):
            assert f'"--{flag}"' in example, f"{script}: the example has no --{flag}"
        for path in re.findall(r"examples/[\w/.-]+", text):
            assert (ROOT / path).exists(), f"{script}: {path} does not exist"
    assert "--archives hydrofeed-env.tar.gz#env" in (CLUSTER / "yarn-submit.sh").read_text()
    pod = (CLUSTER / "pod-template.yaml").read_text()
    assert re.search(r"^kind: Pod$", pod, re.M) and "spark-kubernetes-executor" in pod


def test_a_packed_env_runs_hydrofeed_from_where_spark_unpacks_it(packed_env: Path,
                                                                 tmp_path: Path) -> None:
    """make-env.sh packs a venv with the wheel (venv-pack), as a YARN job ships it with
    `--archives hydrofeed-env.tar.gz#env`; unpacked elsewhere, its python finds its own
    hydrofeed binary, with nothing set."""
    import tarfile

    env_dir = tmp_path / "container" / "env"  # where YARN unpacks `#env` in the container
    env_dir.mkdir(parents=True)
    with tarfile.open(packed_env) as t:
        t.extractall(env_dir, filter="fully_trusted")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    p = subprocess.run(["./env/bin/python", "-c",
                        "from hydrofeed._proc import hydrofeed_bin; import subprocess; "
                        "b = hydrofeed_bin(); print(b); "
                        "print(subprocess.run([b, '--version'], capture_output=True, "
                        "text=True).stdout)"],
                       capture_output=True, text=True, env=env, cwd=env_dir.parent, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.split("\n")
    assert lines[0] in ("env/bin/hydrofeed", str(env_dir / "bin/hydrofeed")), lines
    assert lines[1].startswith("hydrofeed "), lines


@pytest.mark.spark
@pytest.mark.parametrize("spark", ["dev", "3.5"])
def test_spark_executors_run_from_a_shipped_environment(wheel: Path, packed_env: Path,
                                                       tmp_path: Path, spark: str) -> None:
    """File mode on local-cluster with executors whose Python and hydrofeed binary come from a
    venv-pack archive (`spark.archives ...#env`, `spark.pyspark.python=./env/bin/python`), as
    YARN users ship them; the test's own PYTHONPATH and HYDROFEED_BIN are not passed on. On the
    development environment's PySpark (4.x) and on PySpark 3.5 (what most TensorFlowOnSpark
    users run; its driver in a fresh venv with the wheel)."""
    import json

    driver = sys.executable
    if spark != "dev":
        venv.create(tmp_path / "driver", with_pip=True)
        driver = str(tmp_path / "driver/bin/python")
        r = subprocess.run([driver, "-m", "pip", "install", "-q", f"pyspark=={spark}.*",
                            str(wheel)], capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr[-3000:]

    data, out = tmp_path / "data", tmp_path / "out"
    out.mkdir()
    subprocess.run([sys.executable, "-c", f"""
import subprocess, sys
from hydrofeed._proc import hydrofeed_bin
subprocess.run([hydrofeed_bin(), 'gen', '--format', 'parquet', '--rows', '2000', '--files', '4',
                '--out', {str(data)!r}], check=True, capture_output=True)
"""], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HYDROFEED_BIN")}
    p = subprocess.run([driver, str(Path(__file__).parent / "archive_job.py"),
                        str(packed_env), str(data), str(out)], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["state_finished"] is True
    if spark != "dev":
        assert res["spark"].startswith(spark), res["spark"]
    ids = sorted(i for rank in res["ranks"] for i in rank["ids"])
    assert ids == list(range(2000))
    for rank in res["ranks"]:
        # The executor's own unpacked environment: its python, its package, its binary.
        assert rank["python"].endswith("/env/bin/python"), rank["python"]
        env_dir = os.path.dirname(os.path.dirname(rank["python"]))
        assert "/.venv/bin" not in rank["python"] and env_dir != str(ROOT / ".venv"), rank
        assert rank["package"].startswith(env_dir), rank
        assert os.path.realpath(rank["binary"]) == os.path.realpath(
            os.path.join(env_dir, "bin/hydrofeed")), rank
