"""Cross-check of a case's results between the two workers, from their summaries.

Both workers computed on bit-identical inputs. Max forwards must agree exactly (values and
indices: both libraries keep the first maximum of a window). Averages and backwards may differ
in the last bits, because the libraries sum in different orders and PyTorch may round partial
sums of 16-bit types; they must agree to a few units of the dtype's precision at a fixed sample
of positions. Where they do not, the case computed in float64 from the same inputs referees
(:func:`referee`): a result within the tolerance of it is right.
"""

from __future__ import annotations

from typing import Any

from .suite import Case

__all__ = ["compare", "referee", "TOLERANCE"]

# relative to the largest magnitude in the sample: a few units in the last place
TOLERANCE = {"float64": 1e-12, "float32": 1e-5, "float16": 4e-3, "bfloat16": 3.2e-2}


def compare(case: Case, ours: dict[str, Any], theirs: dict[str, Any]) -> tuple[str, str]:
    """``("bitwise" | "close" | "MISMATCH", detail)`` for two summaries of one case.

    Parameters
    ----------
    case : Case
        The case both summaries describe.
    ours, theirs : dict
        :func:`.data.summarize` of each worker's result.
    """
    a, b = ours["arrays"], theirs["arrays"]
    if len(a) != len(b):
        return "MISMATCH", f"{len(a)} result arrays against {len(b)}"
    for k, (x, y) in enumerate(zip(a, b)):
        if x["shape"] != y["shape"]:
            return "MISMATCH", f"result {k}: shape {x['shape']} against {y['shape']}"
    if all(x["sha256"] == y["sha256"] for x, y in zip(a, b)):
        return "bitwise", ""
    spec = case.spec
    if spec.indices:
        which = ["values", "indices"]
        bad = [which[k] for k, (x, y) in enumerate(zip(a, b)) if x["sha256"] != y["sha256"]]
        return "MISMATCH", f"max forward {' and '.join(bad)} differ"
    worst = _difference(a, b)
    detail = f"max relative difference {worst:.2g} in the sample"
    return ("close" if worst <= TOLERANCE[case.dtype] else "MISMATCH"), detail


def _difference(a: list[dict], b: list[dict]) -> float:
    """The largest difference of the value arrays' samples, relative to ``b``'s magnitude."""
    worst = 0.0
    for x, y in zip(a, b):
        if x["index"]:
            continue
        scale = max((abs(v) for v in y["sample"]), default=0.0) or 1.0
        err = max((abs(u - v) for u, v in zip(x["sample"], y["sample"])), default=0.0) / scale
        worst = max(worst, err)
    return worst


def referee(case: Case, ours: dict, theirs: dict, reference: dict) -> tuple[str, str]:
    """``("ours exact" | "MISMATCH", detail)`` for two summaries that :func:`compare` found
    apart, against ``reference``, the case's float64 result on the same inputs: "ours exact"
    where ours is within the tolerance of it and PyTorch's is not (PyTorch rounds partial sums
    of 16-bit types, for one)."""
    e_ours = _difference(ours["arrays"], reference["arrays"])
    e_theirs = _difference(theirs["arrays"], reference["arrays"])
    detail = (f"relative difference from float64: ours {e_ours:.2g}, PyTorch's {e_theirs:.2g} "
              f"(tolerance {TOLERANCE[case.dtype]:.2g})")
    ok = e_ours <= TOLERANCE[case.dtype] < e_theirs
    return ("ours exact" if ok else "MISMATCH"), detail
