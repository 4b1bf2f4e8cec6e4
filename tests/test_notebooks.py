"""The examples: every notebook runs top to bottom, and so does its plain-script twin.

Each ``examples/NAME.ipynb`` is generated from ``examples/NAME.py`` (cells marked ``# %%`` and
``# %% [markdown]``, the percent format of Jupytext, VS Code and Spyder), so the two never drift
apart. After editing a script, regenerate its notebook (stored without outputs) with::

    .venv/bin/python tests/test_notebooks.py

The notebooks run in a kernel of *this* interpreter (the virtualenv's ipykernel), through a
kernelspec written to a temporary directory: a user-level ``python3`` kernelspec pointing at
some other Python cannot shadow it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(EXAMPLES.glob("*.py"))
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))
KERNEL_NAME = "adaptive-pool-examples"
CELL_TIMEOUT_S = 300  # generous: a first run on a fresh clone compiles the kernels

#: Files each script must save when run without a display (MPLBACKEND=Agg), in its cwd.
FIGURES = {
    "quickstart": ["quickstart_windows.png", "quickstart_gradient.png"],
    "beyond_pytorch": [],
}


# -- percent-format script -> notebook ------------------------------------------------------
def script_cells(text: str) -> list[tuple[str, str]]:
    """The ``(cell_type, source)`` cells of a percent-format script."""
    cells: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("# %%"):
            kind = "markdown" if line.strip() == "# %% [markdown]" else "code"
            cells.append((kind, []))
            continue
        if not cells:
            raise ValueError("a percent-format script must start with a '# %%' line")
        kind, lines = cells[-1]
        if kind == "markdown":
            if line and not line.startswith("#"):
                raise ValueError(f"markdown cell line is not a comment: {line!r}")
            line = line[2:] if line.startswith("# ") else line[1:]
        lines.append(line)
    return [(kind, "\n".join(lines).strip("\n")) for kind, lines in cells]


def notebook_from_script(path: Path):
    """A notebook (no outputs) whose cells are those of the script at ``path``."""
    import nbformat  # noqa: PLC0415

    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
            "name": "python3",
        },
        "language_info": {"name": "python"},
    }
    for k, (kind, source) in enumerate(script_cells(path.read_text())):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        nb.cells.append(make(source, id=f"{path.stem}-{k:02d}"))
    return nb


def write_notebooks() -> None:
    import nbformat  # noqa: PLC0415

    for script in SCRIPTS:
        target = script.with_suffix(".ipynb")
        nbformat.write(notebook_from_script(script), target)
        print(f"wrote {target}")


# -- fixtures --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory) -> Path:
    """A kernelspec that starts ipykernel in this interpreter."""
    pytest.importorskip("ipykernel")
    root = tmp_path_factory.mktemp("kernels")
    spec = root / KERNEL_NAME
    spec.mkdir()
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "adaptive_pool examples",
                "language": "python",
            }
        )
    )
    return root


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env.pop("NUMBA_ENABLE_CUDASIM", None)  # the examples use the real CPU backend
    env.update(extra)
    return env


# -- tests -----------------------------------------------------------------------------------
def test_examples_exist():
    assert {p.stem for p in SCRIPTS} == {p.stem for p in NOTEBOOKS} >= set(FIGURES)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_its_script_and_has_no_outputs(notebook):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(notebook, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{notebook.name} is stored with outputs; clear them (or regenerate it)"
            )
    expected = notebook_from_script(notebook.with_suffix(".py"))
    got = [(c.cell_type, c.source) for c in nb.cells]
    want = [(c.cell_type, c.source) for c in expected.cells]
    assert got == want, (
        f"{notebook.name} differs from {notebook.with_suffix('.py').name}; regenerate it with "
        f"`python tests/test_notebooks.py`"
    )
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    for cell in nb.cells:  # small cells
        assert cell.source.count("\n") < 40, cell.source[:80]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(notebook, kernel_dir, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from jupyter_client.kernelspec import KernelSpecManager  # noqa: PLC0415
    from jupyter_client.manager import KernelManager  # noqa: PLC0415

    nb = nbformat.read(notebook, as_version=4)
    km = KernelManager(
        kernel_name=KERNEL_NAME,
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernel_dir)]),
    )
    client = nbclient.NotebookClient(
        nb, km=km, timeout=CELL_TIMEOUT_S, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute(env=_env())

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, errors
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    rich = [o.data for o in outputs if o.output_type in ("display_data", "execute_result")]
    if notebook.stem == "quickstart":
        assert sum("image/png" in d for d in rich) == 2  # windows and gradient, drawn inline
        assert any('class="adaptive-pool-executor"' in d.get("text/html", "") for d in rich)
        assert "max backward equal: True" in text or "PyTorch is not installed" in text
    if notebook.stem == "beyond_pytorch":
        assert "5 runs bitwise equal: True" in text
        assert "exact       : True" in text
        assert "No CUDA GPU here" in text or "backward CPU == GPU bitwise: True" in text
    assert not list(tmp_path.glob("*.png")), "a notebook saved figures instead of showing them"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_runs(script, tmp_path):
    pytest.importorskip("matplotlib")
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=_env(MPLBACKEND="Agg"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for name in FIGURES.get(script.stem, []):
        assert (tmp_path / name).stat().st_size > 1000, name
        assert f"saved {name}" in proc.stdout
    assert "Traceback" not in proc.stderr


@pytest.mark.cudasim
def test_gpu_cells_run_in_the_cuda_simulator(tmp_path):
    """The GPU section of each script (skipped without a GPU) runs against Numba's simulator."""
    for script in SCRIPTS:
        cells = script_cells(script.read_text())
        heads = [
            k for k, (kind, src) in enumerate(cells)
            if kind == "markdown" and "GPU" in src.split("\n")[0]
        ]
        if not heads:
            continue
        setup = next(src for kind, src in cells if kind == "code")
        gpu = [src for kind, src in cells[heads[0] :] if kind == "code"]
        code = "\n\n".join([setup, *gpu])
        proc = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            env=_env(NUMBA_ENABLE_CUDASIM="1", MPLBACKEND="Agg"),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "No CUDA GPU here" not in proc.stdout, proc.stdout
        assert "CPU == GPU bitwise: False" not in proc.stdout, proc.stdout
        assert proc.stdout.count("CPU == GPU bitwise: True") >= 1, proc.stdout


if __name__ == "__main__":
    write_notebooks()
