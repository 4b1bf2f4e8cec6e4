"""Name Numba's compiled kernels in Linux ``perf`` profiles.

``perf`` shows JIT-compiled code as bare addresses unless the process leaves a map in
``/tmp/perf-<pid>.map``. This runs a script, then writes that map for every compiled
overload of the package's kernels (their addresses from the libraries' symbol lookups, each
function's size up to the next one's start) and for the runtime's ``NRT_incref`` /
``NRT_decref``, whose share of the samples is the cost of atomic reference counts in the
kernels (docs/performance.md). With ``--code DIR``, each function's machine code is also
saved there (``<address>.bin``, for ``objdump -D -b binary -mi386:x86-64
--adjust-vma=0x<address>``), so that hot addresses (``perf script -F ip``) can be read as
instructions.

    NUMBA_NUM_THREADS=1 perf record -o /tmp/p.data python tools/perf_map.py my_case.py
    perf report -i /tmp/p.data --stdio --sort sym
"""
import argparse
import atexit
import ctypes
import os
import runpy
import sys


def _functions() -> dict:
    """Address -> name of every compiled adaptive_pool overload and of the NRT counts."""
    from numba.core.registry import CPUDispatcher
    from numba.core.runtime import rtsys

    names, libraries = {}, {}
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("adaptive_pool"):
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, CPUDispatcher):
                for compiled in value.overloads.values():
                    names[compiled.fndesc.llvm_func_name] = f"{module_name}.{attr}"
                    libraries[id(compiled.library)] = compiled.library
    found = {}
    # a callee compiled apart is linked into each caller's library: looked up in all of them
    for library in libraries.values():
        for symbol, name in names.items():
            try:
                address = library.get_pointer_to_function(symbol)
            except Exception:  # noqa: BLE001 - not defined in this library
                address = 0
            if address:
                found[address] = name
    for name in ("NRT_incref", "NRT_decref"):
        found[rtsys.library.get_pointer_to_function(name)] = name
    return found


def write(code_dir: str | None = None) -> None:
    """Write ``/tmp/perf-<pid>.map`` (and, with ``code_dir``, each function's bytes)."""
    found = _functions()
    mapped = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
            mapped.append((lo, hi))
    starts = sorted(found)
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as out:
        for i, address in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else address + (1 << 16)
            end = min([end] + [hi for lo, hi in mapped if lo <= address < hi])
            out.write(f"{address:x} {end - address:x} {found[address]}\n")
            if code_dir:
                with open(os.path.join(code_dir, f"{address:x}.bin"), "wb") as f:
                    f.write(ctypes.string_at(address, end - address))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--code", help="also save each function's machine code in this folder")
    p.add_argument("script", help="the Python script to run (its arguments follow)")
    args, rest = p.parse_known_args()
    if args.code:
        os.makedirs(args.code, exist_ok=True)
    atexit.register(write, args.code)
    sys.argv = [args.script, *rest]
    runpy.run_path(args.script, run_name="__main__")


if __name__ == "__main__":
    main()
