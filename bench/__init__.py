"""memfuse_lite benchmarks: run as ``python3 -m bench <command>``; see bench/RESULTS.md."""
