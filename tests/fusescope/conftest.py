"""Fixtures: the seed-001 fusion as a file, a file without inputs or sizes, and a file the loader
must refuse."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fusescope.fusions import SEED001_FILE, SYMBOLIC_FILE


@pytest.fixture
def seed001_file(tmp_path: Path) -> Path:
    p = tmp_path / "seed001.py"
    p.write_text(SEED001_FILE)
    return p


@pytest.fixture
def symbolic_file(tmp_path: Path) -> Path:
    p = tmp_path / "symbolic.py"
    p.write_text(SYMBOLIC_FILE)
    return p


@pytest.fixture
def malformed_file(tmp_path: Path) -> Path:
    # Line 3 is code the loader must refuse (and never run).
    p = tmp_path / "evil.py"
    p.write_text(
        "def nvfuser_fusion_id0(fd : FusionDefinition) -> None :\n"
        "    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)\n"
        "    import os\n"
        "    fd.add_output(T0)\n"
    )
    return p
