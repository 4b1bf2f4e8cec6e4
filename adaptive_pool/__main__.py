"""Command line: ``python -m adaptive_pool demo|bench|warmup [options]``.

``bench`` is the package :mod:`adaptive_pool.bench`; its first argument may name a mode
(``bench torch ...``, ``bench dask ...``, ``bench skipna ...``) that it imports only when asked
for.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the ``demo``, ``bench`` or ``warmup`` subcommand; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m adaptive_pool {demo,bench,warmup} [options]\n")
        print("  demo    run every operator on example data, on every backend, checked")
        print("  bench   time every operator against PyTorch, each in its own process (see "
              "`bench --help`;\n          modes: `bench torch ...`, `bench dask ...`, "
              "`bench skipna ...`)")
        print("  warmup  compile every CPU kernel into Numba's cache, in parallel processes")
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "demo":
        from .demo import main as run  # noqa: PLC0415 - import only what runs
    elif command == "bench":
        from .bench import main as run  # noqa: PLC0415
    elif command == "warmup":
        from .warmup import main as run  # noqa: PLC0415
    else:
        print(f"unknown command {command!r}; expected demo, bench or warmup", file=sys.stderr)
        return 2
    return run(rest)


if __name__ == "__main__":
    sys.exit(main())
