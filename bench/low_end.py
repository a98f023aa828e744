"""Rerun a benchmark as on a low-end phone: one core and 1 GB of memory.

    python3 -m bench low-end [--memory-mb 1024] [--core 0] -- engine --size 100000 ...

The benchmark after ``--`` runs in a child process pinned to one core (``taskset``) inside
a memory cgroup limited to ``--memory-mb`` (cgroup v2 ``memory.max`` or v1
``memory.limit_in_bytes``, swap included where the kernel allows; without a writable
cgroup the run stops with the reason: an address-space limit would fail the model
runtimes, which reserve far more than they use). Its result is written as
``NAME-one-core-1gb.json`` (the profile in the name), beside the full machine's; the
exit status, whether the kernel killed it for memory, and the cgroup's peak usage are
printed and saved as ``low-end-NAME.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .common import write_result

CGROUP_V2 = Path("/sys/fs/cgroup")
CGROUP_V1 = Path("/sys/fs/cgroup/memory")


def make_cgroup(name: str, limit: int) -> tuple[Path, Path]:
    """A memory cgroup limited to ``limit`` bytes: (its folder, its peak-usage file)."""
    if (CGROUP_V2 / "cgroup.controllers").exists():
        group = CGROUP_V2 / name
        group.mkdir(exist_ok=True)
        (group / "memory.max").write_text(str(limit))
        if (group / "memory.swap.max").exists():
            (group / "memory.swap.max").write_text("0")
        return group, group / "memory.peak"
    group = CGROUP_V1 / name
    group.mkdir(exist_ok=True)
    (group / "memory.limit_in_bytes").write_text(str(limit))
    swap = group / "memory.memsw.limit_in_bytes"
    if swap.exists():
        with contextlib.suppress(OSError):  # swap accounting off: the limit holds for RAM
            swap.write_text(str(limit))
    (group / "memory.max_usage_in_bytes").write_text("0")
    return group, group / "memory.max_usage_in_bytes"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python3 -m bench low-end", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memory-mb", type=int, default=1024)
    ap.add_argument("--core", type=int, default=0)
    ap.add_argument("bench", nargs=argparse.REMAINDER,
                    help="-- then the benchmark and its options")
    args = ap.parse_args(argv)
    command = [a for a in args.bench if a != "--"]
    if not command:
        ap.error("give the benchmark to run after --")
    if shutil.which("taskset") is None:
        ap.error("taskset (util-linux) is needed to pin the run to one core")
    name = f"memfuse-low-end-{os.getpid()}"
    try:
        group, peak = make_cgroup(name, args.memory_mb << 20)
    except OSError as exc:
        sys.exit(f"no memory cgroup can be made here ({exc}): run as root on a machine "
                 "with cgroups")
    profile = f"one-core-{args.memory_mb // 1024}gb" if args.memory_mb % 1024 == 0 \
        else f"one-core-{args.memory_mb}mb"
    wrapper = f"python3 -m bench low-end --memory-mb {args.memory_mb} --core {args.core} --"
    env = {**os.environ, "MEMFUSE_BENCH_PROFILE": profile, "MEMFUSE_BENCH_WRAPPER": wrapper}

    def enter() -> None:  # in the child, before it runs the benchmark
        (group / "cgroup.procs").write_text(str(os.getpid()))

    done = subprocess.run(["taskset", "-c", str(args.core), sys.executable, "-m", "bench",
                           *command], env=env, preexec_fn=enter,
                          cwd=Path(__file__).resolve().parents[1])
    peak_mb = round(int(peak.read_text()) / 2**20, 1) if peak.exists() else None
    killed = done.returncode in (-9, 137)
    print(f"{profile}: exit status {done.returncode}"
          f"{' (killed: out of memory)' if killed else ''}; peak memory {peak_mb} MB of "
          f"{args.memory_mb} MB")
    with contextlib.suppress(OSError):
        group.rmdir()
    write_result(f"low-end-{command[0]}", {"command": f"{wrapper} {' '.join(command)}",
                                           "profile": profile, "exit_status": done.returncode,
                                           "killed_for_memory": killed,
                                           "peak_memory_mb": peak_mb})
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
