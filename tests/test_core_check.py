"""The Rust toolchain and the compiled core as the test suite finds them: tools/find_rust.sh (install.sh and
tests/run_all.sh both source it) finds a toolchain whose cargo is not on PATH and gives that cargo its rustc, and
tests/tools/check_core.sh (run first by run_all.sh) fails where the core could be built but is missing or stale, and
in CI without a toolchain, and skips with a clear message for a user without Rust.

The core is hidden by a PYTHONPATH entry holding a stand-in `quicack_core` module that fails to import (or, for a
stale core, one reporting another build identity); the toolchain by QUICACK_RUST_DIRS naming no folder."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHECK = REPO / "tests" / "tools" / "check_core.sh"


BASH = shutil.which("bash") or "/bin/bash"


def _bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [BASH, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, encoding="utf-8", timeout=120
    )


def _clean_env(**changes: str) -> dict[str, str]:
    """This environment without the switches the check reads (CI may set CI=true around the suite)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("CI", "QUICACK_REQUIRE_CORE", "QUICACK_RUST_DIRS")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    return env | changes


def _toolchain_bin() -> Path:
    """The folder of the real binaries (not rustup's proxies) of the rustc on PATH or in ~/.cargo/bin; fails in CI
    without one."""
    for rustc in (shutil.which("rustc"), Path.home() / ".cargo" / "bin" / "rustc", "/usr/bin/rustc"):
        if rustc and Path(rustc).is_file():
            sysroot = subprocess.run(
                [rustc, "--print", "sysroot"], capture_output=True, text=True, encoding="utf-8", timeout=60
            )
            folder = Path(sysroot.stdout.strip()) / "bin"
            if sysroot.returncode == 0 and (folder / "cargo").is_file():
                return folder
    if os.environ.get("CI") == "true":
        pytest.fail("no Rust toolchain found, and CI tests the compiled core")
    pytest.skip("no Rust toolchain here (install.sh installs one)")


def _check(env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run(
        ["bash", str(CHECK)], cwd=REPO, env=env, capture_output=True, text=True, encoding="utf-8", timeout=120
    )
    return done.returncode, done.stdout + done.stderr


@pytest.fixture
def hidden_core(tmp_path: Path) -> str:
    """A PYTHONPATH entry that makes `import quicack_core` fail, as where it is not installed."""
    (tmp_path / "quicack_core.py").write_text(
        'raise ImportError("quicack_core hidden by the test")\n', encoding="utf-8"
    )
    return str(tmp_path)


def _without(core: str, **changes: str) -> dict[str, str]:
    env = _clean_env(**changes)
    env["PYTHONPATH"] = os.pathsep.join([core, env["PYTHONPATH"]])
    return env


def test_find_rust_gives_a_cargo_outside_path_its_rustc(tmp_path: Path) -> None:
    # a toolchain in ~/.cargo/bin that is not on PATH (no rustup proxies): cargo alone cannot run rustc -vV
    real = _toolchain_bin()
    home_bin = tmp_path / "home" / ".cargo" / "bin"
    home_bin.mkdir(parents=True)
    for tool in ("cargo", "rustc"):
        (home_bin / tool).symlink_to(real / tool)
    # PATH: only the tools the scripts use (no cargo, no rustc), as on a machine where rustup is not on PATH
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("bash", "sed", "sort", "head", "dirname", "cat"):
        (tools / tool).symlink_to(shutil.which(tool))
    env = _clean_env(HOME=str(tmp_path / "home"), PATH=str(tools))
    # cargo's first step on any crate, `cargo test` included: `rustc -vV` (a crate without dependencies and code keeps
    # it to that step; quicack_core's would need its crates from the registry of the real home)
    crate = tmp_path / "crate"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "empty"\nversion = "0.1.0"\n', encoding="utf-8")
    (crate / "src" / "lib.rs").write_text("", encoding="utf-8")
    metadata = f"metadata --format-version 1 --offline --manifest-path {crate / 'Cargo.toml'}"
    alone = _bash(f'"$HOME/.cargo/bin/cargo" {metadata} >/dev/null', env)
    assert alone.returncode != 0 and "could not execute process `rustc -vV`" in alone.stderr  # run_all.sh before
    found = _bash(
        f'source tools/find_rust.sh; dir=$(find_rust); echo "$dir"; rust_cargo "$dir" {metadata} >/dev/null', env
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(home_bin)


def test_the_check_passes_with_the_installed_core() -> None:
    code, out = _check(_clean_env())
    assert code == 0, out
    assert "is built from these sources" in out or "no Rust" in out


def test_a_missing_core_fails_where_rust_can_build_it(hidden_core: str) -> None:
    real = _toolchain_bin()
    code, out = _check(_without(hidden_core, QUICACK_RUST_DIRS=str(real)))
    assert code == 1
    assert "quicack_core: FAILED: not installed, although Rust" in out and "bash install.sh" in out


def test_without_rust_the_core_is_a_clear_skip(hidden_core: str) -> None:
    code, out = _check(_without(hidden_core, QUICACK_RUST_DIRS="/nonexistent"))
    assert code == 0, out
    assert "no Rust >= " in out and "skipped" in out


def test_in_ci_a_missing_toolchain_fails(hidden_core: str) -> None:
    code, out = _check(_without(hidden_core, QUICACK_RUST_DIRS="/nonexistent", CI="true"))
    assert code == 1
    assert "FAILED: no Rust >= " in out and "CI (CI=true)" in out


def test_in_ci_a_missing_core_fails(hidden_core: str) -> None:
    real = _toolchain_bin()
    code, out = _check(_without(hidden_core, QUICACK_RUST_DIRS=str(real), CI="true"))
    assert code == 1 and "FAILED: not installed" in out


def test_a_stale_core_fails_handmade_stand_in(tmp_path: Path) -> None:
    # a stand-in module reporting a build of other sources: what an installed core is after the crate changed
    (tmp_path / "quicack_core.py").write_text(
        "def build_identity():\n    return '0.1.0+0000000000000000'\n", encoding="utf-8"
    )
    code, out = _check(_without(str(tmp_path)))
    assert code == 1
    assert "FAILED: the installed quicack_core (0.1.0+0000000000000000) is not built from" in out


def test_the_core_can_be_left_out_on_purpose(hidden_core: str) -> None:
    code, out = _check(_without(hidden_core, QUICACK_REQUIRE_CORE="0", CI="true"))
    assert code == 0 and "not required (QUICACK_REQUIRE_CORE=0)" in out


def test_run_all_checks_the_core_first_and_finds_rust_as_install_sh_does() -> None:
    run_all = (REPO / "tests" / "run_all.sh").read_text(encoding="utf-8").splitlines()
    install = (REPO / "install.sh").read_text(encoding="utf-8")
    commands = [line for line in run_all if line.strip() and not line.lstrip().startswith("#")]
    assert commands[:3] == ["set -euo pipefail", 'cd "$(dirname "$0")/.."', "bash tests/tools/check_core.sh"]
    assert "source tools/find_rust.sh" in run_all and "source tools/find_rust.sh" in install
    assert "find_rust() {" not in install  # one home: tools/find_rust.sh
