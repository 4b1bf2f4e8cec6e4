"""The API reference builds from the docstrings with Sphinx warnings as errors (``make docs``).

So a docstring that numpydoc or docutils cannot parse fails the test run, not a later
documentation build. Skipped only where Sphinx or numpydoc is not installed (the ``test``
extras install both).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("numpydoc")

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _build(src: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(src), str(out)],
        capture_output=True, text=True, timeout=300,
    )


def test_api_reference_builds_without_warnings(tmp_path):
    r = _build(DOCS, tmp_path / "html")
    assert r.returncode == 0, r.stderr[-4000:]
    api = (tmp_path / "html" / "api.html").read_text()
    for name in ("adaptive_pool.adaptive_avg_pool2d", "adaptive_pool.adaptive_max_pool3d_backward",
                 "adaptive_pool.acl.adaptive_avg_pool2d_backward_get_workspace_size",
                 "adaptive_pool.warmup.warmup"):
        assert f'id="{name}"' in api, name


def test_a_broken_docstring_fails_the_build(tmp_path):
    """The same configuration on a module whose docstring has a malformed section."""
    src = tmp_path / "src"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "*.md"))
    (tmp_path / "broken_mod.py").write_text(
        'def f(a):\n    """Do.\n\n    Parameters\n    ----------\n    a : int\n'
        '        The value.\n\n    Returns\n    -------\n    int\n\n'
        '    .. nosuchdirective::\n    """\n    return a\n'
    )
    (src / "api.rst").write_text(
        "API\n===\n\n.. automodule:: broken_mod\n   :members:\n"
    )
    conf = src / "conf.py"
    conf.write_text(conf.read_text() + f"\nsys.path.insert(0, {str(tmp_path)!r})\n")
    r = _build(src, tmp_path / "html")
    assert r.returncode != 0
    assert "nosuchdirective" in r.stderr
