"""pyproject.toml and environment.yml must install the same packages."""

import re
import tomllib

import yaml

from conftest import REPO


def package_names(requirements):
    return {re.split(r"[<>=!~\[ ]", r.strip(), maxsplit=1)[0].lower() for r in requirements}


def test_pyproject_and_environment_name_the_same_packages():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    env_packages = package_names(p for p in pip_section if not p.startswith("-e"))
    assert package_names(pyproject["project"]["dependencies"]) == env_packages


def test_environment_installs_the_project_itself():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert "-e ." in pip_section
