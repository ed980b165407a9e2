"""The README, .ci/run and pyproject.toml must tell the same story; each check here has failed
or could fail when one of them is edited alone."""

from __future__ import annotations

import re
import tomllib
from importlib import import_module
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_readme_install_line_pins_torch_before_the_project() -> None:
    install = _bash_blocks(README)[0].strip()
    assert "\n" not in install, "the install command is one line"
    assert install.index("pip install torch==2.13.0") < install.index("pip install -e '.[dev]'")
    assert install.endswith("&& fusescope"), "the line ends by opening the TUI"


def test_ci_installs_as_the_readme_says_and_runs_its_test_command() -> None:
    test_line = _bash_blocks(README)[1].strip()
    test_cmd = test_line.split("&&")[-1].strip()
    assert test_cmd == "python -m pytest"
    ci_cmds = [ln.strip() for ln in CI.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    torch_at = ci_cmds.index("pip install torch==2.13.0")
    project_at = ci_cmds.index("pip install -e '.[dev]'")
    assert torch_at < project_at
    assert any(c.startswith(test_cmd) for c in ci_cmds[project_at:])
    assert "set -euo pipefail" in ci_cmds
    assert '"$rc" -eq 5' in CI, "pytest's 'no tests collected' must fail CI"


def test_torch_requirement_accepts_the_pinned_and_the_device_versions() -> None:
    spec = next(d for d in PYPROJECT["project"]["dependencies"] if d.startswith("torch"))
    m = re.fullmatch(r"torch>=(\d+)\.(\d+)", spec.replace(" ", ""))
    assert m, f"keep the torch requirement a plain lower bound, got {spec!r}"
    low = (int(m[1]), int(m[2]))
    assert low <= (2, 11)  # the device machine has 2.11; the pinned CPU wheel is 2.13


def test_console_script_and_package_data_exist() -> None:
    target = PYPROJECT["project"]["scripts"]["fusescope"]
    module, func = target.split(":")
    assert callable(getattr(import_module(module), func))
    for pattern in PYPROJECT["tool"]["setuptools"]["package-data"]["fusescope"]:
        assert list((ROOT / "fusescope").glob(pattern)), f"package data {pattern!r} matches nothing"
