"""Owns the canary's calls to npm: the pins (package.json's dependencies), the version a
package's `latest` tag names on the registry, and installing one package at one version into a
prefix of its own. npm is run with the caller's environment, so its registry, cache and proxy
settings (`npm_config_*`, `.npmrc`) apply; an installed command is started once
(`--version`) to prove it runs here. Knows nothing of the tests."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Mapping

VIEW_TIMEOUT_S = 120
INSTALL_TIMEOUT_S = 1200
VERSION_TIMEOUT_S = 60


class NpmFailed(Exception):
    """npm could not answer or install; the message is npm's own first error line."""


def pins(package_json: Path) -> dict[str, str]:
    """package name -> pinned version, from package.json's dependencies."""
    return dict(json.loads(package_json.read_text(encoding="utf-8"))["dependencies"])


def _npm(args: list[str], env: Mapping[str, str], cwd: Path, timeout: float) -> str:
    try:
        proc = subprocess.run(["npm", *args], cwd=cwd, env=dict(env), text=True,
                              capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout)
    except FileNotFoundError:
        raise NpmFailed("npm is not installed (apt-get install nodejs npm)") from None
    except subprocess.TimeoutExpired:
        raise NpmFailed(f"npm {args[0]} did not answer within {timeout:.0f}s") from None
    if proc.returncode != 0:
        lines = [line.removeprefix("npm error ").strip() for line in proc.stderr.splitlines()
                 if line.strip() and "A complete log of this run" not in line]
        first = next((line for line in lines if line.startswith(("code ", "404", "E"))), None)
        detail = "; ".join(dict.fromkeys(filter(None, [first, *lines[:2]])))
        raise NpmFailed(f"npm {args[0]} exited {proc.returncode}: {detail or 'no message'}")
    return proc.stdout


def latest(package: str, env: Mapping[str, str], cwd: Path) -> str:
    """The version the registry's `latest` tag names."""
    out = _npm(["view", f"{package}@latest", "version", "--json"], env, cwd, VIEW_TIMEOUT_S)
    try:
        version = json.loads(out)
    except ValueError:
        raise NpmFailed(f"npm view {package}: not JSON: {out.strip()[:120]}") from None
    if isinstance(version, list):          # several versions matched: the newest is last
        version = version[-1] if version else None
    if not isinstance(version, str) or not version:
        raise NpmFailed(f"npm view {package}: the registry names no latest version")
    return version


def install(package: str, version: str, prefix: Path, binary: str,
            env: Mapping[str, str]) -> bool:
    """`package@version` installed into `prefix` (a package.json of its own, so npm never
    touches another prefix), its `node_modules/.bin/<binary>` proved to start. False: it was
    there already from an earlier run, and nothing was run."""
    marker = prefix / ".installed"
    wanted = f"{package}@{version}\n"
    bin_path = prefix / "node_modules" / ".bin" / binary
    if marker.is_file() and marker.read_text(encoding="utf-8") == wanted and bin_path.exists():
        return False
    prefix.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    (prefix / "package.json").write_text(json.dumps({
        "name": "ralph-canary", "private": True,
        "dependencies": {package: version}}, indent=2) + "\n", encoding="utf-8")
    (prefix / "package-lock.json").unlink(missing_ok=True)
    _npm(["install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error"],
         env, prefix, INSTALL_TIMEOUT_S)
    if not bin_path.exists():
        raise NpmFailed(f"npm installed {package}@{version} but no `{binary}` came with it")
    _runs(bin_path, package, version, env, prefix)
    marker.write_text(wanted, encoding="utf-8")
    return True


def _runs(bin_path: Path, package: str, version: str, env: Mapping[str, str],
          prefix: Path) -> None:
    """The installed command starts: `<binary> --version` exits 0. A wrapper whose native
    package is missing for this platform installs without an error but cannot run, and the
    tests would then find the pinned CLI next on PATH (a failed exec moves on to the next
    entry) and pass against the wrong release."""
    home = prefix / "home"
    home.mkdir(exist_ok=True)
    try:
        proc = subprocess.run([str(bin_path), "--version"], cwd=prefix,
                              env={**env, "HOME": str(home)}, text=True, capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=VERSION_TIMEOUT_S)
    except OSError as err:
        raise NpmFailed(f"{package}@{version} installed, but `{bin_path.name}` does not "
                        f"start: {err.strerror}") from None
    except subprocess.TimeoutExpired:
        raise NpmFailed(f"{package}@{version} installed, but `{bin_path.name} --version` "
                        f"did not end within {VERSION_TIMEOUT_S}s") from None
    if proc.returncode != 0:
        said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise NpmFailed(f"{package}@{version} installed, but `{bin_path.name} --version` "
                        f"exited {proc.returncode}: {said[0] if said else 'no message'}")


__all__ = ["NpmFailed", "pins", "latest", "install"]
