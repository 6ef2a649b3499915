"""pyproject.toml, environment.yml and the lock constraints.txt must describe one environment; installed versions
are read one way (attnlab.core.packages) for the provenance, the drift line and the writeup rule."""

import os
import re
import shutil
import subprocess
import tomllib
from importlib import metadata

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from attnlab.core.packages import installed_versions
from attnlab.pipeline.ground.environment import read_lock, version_drift
from conftest import REPO

LOCK = REPO / "constraints.txt"


def package_names(requirements):
    return {re.split(r"[<>=!~\[ ]", r.strip(), maxsplit=1)[0].lower() for r in requirements}


def pyproject_requirements() -> list[Requirement]:
    return [Requirement(r) for r in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]]


def environment_pip() -> list[str]:
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    return next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)


def lock_lines() -> list[str]:
    return [line.strip() for line in LOCK.read_text().splitlines() if line.strip() and not line.startswith("#")]


def test_pyproject_and_environment_name_the_same_packages():
    env_packages = package_names(p for p in environment_pip() if not p.startswith("-"))
    assert package_names(str(r) for r in pyproject_requirements()) == env_packages


def test_pyproject_and_environment_give_the_same_bounds():
    env = {canonicalize_name(r.name): r.specifier
           for r in (Requirement(p) for p in environment_pip() if not p.startswith("-"))}
    assert env == {canonicalize_name(r.name): r.specifier for r in pyproject_requirements()}


def test_environment_installs_the_project_itself_through_the_lock():
    pip_section = environment_pip()
    assert "-e ." in pip_section
    assert "-c constraints.txt" in pip_section


def test_the_lock_pins_every_line_exactly_once_and_not_the_project():
    names = []
    for line in lock_lines():
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==[^\s=<>!~;]+", line), f"not an exact pin: {line!r}"
        names.append(canonicalize_name(line.split("==")[0]))
    assert len(names) == len(set(names)), "a package is pinned twice"
    assert "attnlab" not in names, "the project itself must not be pinned (it is installed editable)"


def test_every_dependency_is_pinned_at_a_version_its_bound_allows():
    lock = read_lock(LOCK)
    for requirement in pyproject_requirements():
        name = canonicalize_name(requirement.name)
        assert name in lock, f"{requirement.name} has no pinned version in constraints.txt; regenerate the lock"
        assert requirement.specifier.contains(lock[name], prereleases=True), \
            f"constraints.txt pins {name}=={lock[name]}, outside pyproject.toml's {requirement}"


def test_everything_the_project_pulls_in_is_pinned():
    """The installed closure of attnlab's requirements (markers evaluated here) is all in the lock."""
    lock, marker_env = read_lock(LOCK), default_environment()
    todo, seen = [Requirement(r) for r in metadata.requires("attnlab") or []], set()
    while todo:
        requirement = todo.pop()
        marker_env["extra"] = ""
        if requirement.marker is not None and not requirement.marker.evaluate(marker_env):
            continue
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        assert name in lock, f"{name} (needed by attnlab) has no pinned version in constraints.txt"
        try:
            todo += [Requirement(r) for r in metadata.requires(requirement.name) or []]
        except metadata.PackageNotFoundError:
            pytest.fail(f"{name} is required but not installed")
    assert len(seen) > 20


def test_lock_is_python_3_11_like_environment_yml():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]
    assert "Python 3.11" in LOCK.read_text().split("\n", 2)[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_installs_through_the_lock_once_and_again_only_when_the_requirements_change(tmp_path):
    """`make`'s environment: made with the locked versions where it is missing, left alone while current, and
    installed again once pyproject.toml or constraints.txt is newer than it (dry runs: nothing is installed)."""
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy2(REPO / name, tmp_path / name)

    quiet = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}  # under make test

    def make(*args):
        return subprocess.run(["make", "--no-print-directory", *args], cwd=tmp_path, env=quiet, capture_output=True,
                              text=True)

    def planned(target="env"):
        return make("-n", target).stdout

    assert "python3 -m venv .venv" in planned() and "pip install --quiet -c constraints.txt -e ." in planned()
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    stamp = tmp_path / ".venv" / ".attnlab-installed"
    stamp.touch()
    assert make("-q", "env").returncode == 0, "a current environment is left alone"
    assert "python -m pytest -q -n 2" in planned("test") and "pip install" not in planned("test")
    later = stamp.stat().st_mtime + 10
    os.utime(tmp_path / "constraints.txt", (later, later))
    assert make("-q", "env").returncode == 1 and "pip install --quiet -c constraints.txt -e ." in planned(), (
        "a newer lock is installed again")


def test_version_drift_lists_only_installed_packages_off_their_pin(tmp_path):
    installed = installed_versions()
    lock = tmp_path / "constraints.txt"
    lock.write_text("\n".join([
        "# a comment",
        f"PyYAML=={installed['pyyaml']}",  # spelled as pip freeze does; matches
        "numpy==0.0.1  # drifted",
        "no-such-package-attnlab==1.0",  # not installed here: not drift
        "-e .",
        "",
    ]))
    drift = version_drift(lock)
    assert drift == [f"numpy {installed['numpy']} installed, 0.0.1 locked"]


def test_version_drift_of_a_matching_lock_is_empty(tmp_path):
    installed = installed_versions()
    lock = tmp_path / "constraints.txt"
    lock.write_text("".join(f"{name}=={version}\n" for name, version in installed.items() if name != "attnlab"))
    assert version_drift(lock) == []


def test_environment_module_stays_jax_free():
    from processes import run

    code = ("import sys, attnlab.pipeline.ground.environment as e; e.version_drift(e.LOCK); "
            "assert 'jax' not in sys.modules and 'flax' not in sys.modules")
    result = run(["-c", code])
    assert result.returncode == 0, result.stderr[-2000:]


# ---- the one reader of installed versions


def test_installed_versions_reads_the_first_metadata_folder_on_the_path(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in ("Jax_Cuda12_Plugin-0.4.35.dist-info", "flax-0.12.8.dist-info", "unpinned-1.0.dist-info"):
        (first / folder).mkdir(parents=True)
    (second / "flax-0.10.0.dist-info").mkdir(parents=True)  # shadowed, as importlib.metadata would find it
    (second / "numpy-2.1.0-py3.11.egg-info").mkdir(parents=True)  # an egg's Python tag is not its version
    path = [str(tmp_path / "missing"), str(first), str(second)]
    assert installed_versions(["flax", "jax-cuda12-plugin", "numpy", "absent"], path) == {
        "flax": "0.12.8", "jax-cuda12-plugin": "0.4.35", "numpy": "2.1.0"}
    assert installed_versions(None, path) == {"flax": "0.12.8", "jax-cuda12-plugin": "0.4.35", "numpy": "2.1.0",
                                              "unpinned": "1.0"}


def test_installed_versions_agree_with_importlib_metadata_on_every_locked_package():
    """The folder names read fast give what reading each METADATA gives, for every package the lock pins."""
    installed = installed_versions(read_lock(LOCK))
    assert len(installed) > 50
    assert installed == {name: metadata.version(name) for name in installed}
    assert set(installed) == {name for name in read_lock(LOCK) if _is_installed(name)}


def _is_installed(name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def test_provenance_records_the_training_packages_through_the_same_reader():
    from attnlab.training import provenance

    recorded = provenance.package_versions()
    assert list(recorded) == list(provenance.PACKAGES)
    assert recorded == {name: installed_versions([name]).get(name) for name in provenance.PACKAGES}
    assert recorded["jax"] == metadata.version("jax") and recorded["numpy"] == metadata.version("numpy")


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")
def test_provenance_records_the_cpus_the_process_may_use_not_the_machines():
    """XLA's CPU pool spreads over the CPUs the process may run on, and yat_b's last digits move with them: a job
    confined to one CPU (taskset, a scheduler's cgroup) must say 1 however many the machine has."""
    from attnlab.training import provenance

    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(before)})
        assert provenance.usable_cpus() == 1
    finally:
        os.sched_setaffinity(0, before)
    assert provenance.usable_cpus() == len(before)
