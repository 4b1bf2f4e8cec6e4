"""The benchmark: ``python -m adaptive_pool bench [MODE] [options]``.

Modules, one responsibility each:

* :mod:`.suite`: operators, the shape syntax, the fixed suite and seeded random shapes;
* :mod:`.data`: inputs bit-identical in both processes, summaries of results;
* :mod:`.worker`, :mod:`.side_ours`, :mod:`.side_torch`: a process serving one library;
* :mod:`.runner`: the two processes, alternating blocks of samples, medians;
* :mod:`.check`: the cross-check of both libraries' results;
* :mod:`.report`: table, geometric means, slower cases, JSON, plot;
* :mod:`.compile`: import and first-call compile cost;
* :mod:`.cli`: the options.

Other modes live in modules of their own, imported only when asked for: ``bench torch ...``
(:mod:`.torch_mode`), ``bench dask ...`` (:mod:`.dask_mode`) and ``bench skipna ...``
(:mod:`.skipna_mode`).
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["main", "MODES"]

# mode -> the module whose main(argv) -> int runs it
MODES = {
    "torch": "adaptive_pool.bench.torch_mode",
    "dask": "adaptive_pool.bench.dask_mode",
    "skipna": "adaptive_pool.bench.skipna_mode",
}


def main(argv: list[str]) -> int:
    """Run ``bench``: a mode named by the first argument, else the two-process benchmark.

    Returns
    -------
    int
        The exit status.
    """
    if argv and argv[0] in MODES:
        name = MODES[argv[0]]
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:  # the mode exists but a library it needs is missing: say that
                raise
            print(f"bench: the {argv[0]!r} mode is not available in this version of "
                  f"adaptive_pool (no module {name})", file=sys.stderr)
            return 2
        return module.main(argv[1:])
    from .cli import main as run  # noqa: PLC0415 - import only what runs

    return run(argv)
