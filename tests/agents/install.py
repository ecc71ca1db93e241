"""The agents' CLIs the tests run, installed once from the npm registry into a cache.

``python tests/agents/install.py`` installs the pinned versions (``.ci/run`` does, before
the tests); the tests' fixtures call :func:`installed` for the one they need. Each package
goes into ``<cache>/<package>@<version>/`` — the cache is ``LOOPKIT_AGENT_CACHE``, else
``~/.cache/loopkit-tests/agents`` — made in a temporary folder and renamed into place under
a lock, so two test workers never install the same one twice nor see half of one.

npm may skip a package's install scripts (npm 11 asks for them to be approved). Claude
Code's package ships a placeholder at ``bin/claude.exe`` that its ``install.cjs`` replaces
with the native binary of the platform's optional package; when ``claude --version`` does
not answer, ``install.cjs`` is run with node, as its postinstall would have.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PINS = {
    "claude": ("@anthropic-ai/claude-code", "2.1.197", "claude"),
    "codex": ("@openai/codex", "0.171.0", "codex"),
    "gemini": ("@google/gemini-cli", "0.61.0", "gemini"),
}


class Missing(RuntimeError):
    """npm (or node) is not on this machine: ``.ci/run`` installs them."""


def cache() -> Path:
    given = os.environ.get("LOOPKIT_AGENT_CACHE")
    return Path(given) if given else Path.home() / ".cache" / "loopkit-tests" / "agents"


def _quiet_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        npm_config_update_notifier="false",
        npm_config_fund="false",
        npm_config_audit="false",
        npm_config_loglevel="error",
    )
    return env


def _answers(binary: Path, version: str) -> bool:
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=60, env={"PATH": os.environ.get("PATH", ""),
                                               "HOME": tempfile.gettempdir()})  # fmt: skip
    except OSError:
        return False
    return done.returncode == 0 and version in done.stdout


def installed(agent: str) -> Path:
    """The executable of ``agent``'s pinned CLI, installed first when it is not."""
    package, version, command = PINS[agent]
    folder = cache() / f"{package.replace('/', '+')}@{version}"
    binary = folder / "node_modules" / ".bin" / command
    if binary.exists():
        return binary
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise Missing("npm and node are needed to install the agents' CLIs (.ci/run installs them)")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():
            return binary
        work = Path(tempfile.mkdtemp(prefix=".install-", dir=folder.parent))
        try:
            subprocess.run(
                ["npm", "install", "--prefix", str(work), "--no-save", "--no-package-lock",
                 f"{package}@{version}"],
                check=True, env=_quiet_env(), stdout=subprocess.DEVNULL, timeout=900,
            )  # fmt: skip
            fresh = work / "node_modules" / ".bin" / command
            if agent == "claude" and not _answers(fresh, version):
                scripts = work / "node_modules" / package
                subprocess.run(["node", "install.cjs"], cwd=scripts, check=True,
                               env=_quiet_env(), timeout=300)  # fmt: skip
            if not _answers(fresh, version):
                raise RuntimeError(f"{package}@{version} installed, but `{command} --version` "
                                   "does not answer")  # fmt: skip
            work.rename(folder)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return binary


def main() -> int:
    for agent in PINS:
        path = installed(agent)
        print(f"{agent}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
