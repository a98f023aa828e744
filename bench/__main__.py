"""``python3 -m bench <command>``: engine, models, report."""

from __future__ import annotations

import sys


def main() -> None:
    commands = {"engine": "bench.engine", "models": "bench.models_speed",
                "quality": "bench.quality", "fusion": "bench.fusion_eval",
                "ask": "bench.ask_speed", "generate": "bench.generate",
                "reliability": "bench.reliability",
                "report": "bench.report"}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print("usage: python3 -m bench {" + ",".join(commands) + "} [options]")
        raise SystemExit(2)
    import importlib

    module = importlib.import_module(commands[sys.argv[1]])
    module.main(sys.argv[2:])


if __name__ == "__main__":
    main()
