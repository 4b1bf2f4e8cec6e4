"""Sphinx configuration: the API reference, generated from the docstrings (numpydoc).

Built by ``make docs`` and by ``tests/test_docs.py``, both with warnings as errors, so a
docstring that does not parse fails the test run.
"""

import os
import sys

# the package from this checkout, not whichever copy is installed
sys.path.insert(0, os.path.abspath(".."))

project = "adaptive_pool"
author = "the adaptive_pool developers"
copyright = "2026, the adaptive_pool developers"

extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
]

# the guides in this folder are Markdown, for reading on the repository; Sphinx builds the
# reference from the .rst pages only
source_suffix = {".rst": "restructuredtext"}
exclude_patterns = ["_build", "*.md"]
root_doc = "index"

autodoc_typehints = "none"  # numpydoc's Parameters sections already give the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False


html_theme = "alabaster"
html_static_path = []
