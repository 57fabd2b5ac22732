"""Sphinx configuration of the documentation: ``python -m sphinx -W --keep-going -b html docs docs/_build/html``.

Pages are Markdown (MyST); the API reference comes from the docstrings (autodoc, Google-style
sections through napoleon). ``-W`` turns every warning into an error; ``tests/test_docs.py`` builds the
site that way and runs every code block of every page.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # document this checkout

project = "torchrec_eval"
author = "torchrec_eval contributors"
copyright = "torchrec_eval contributors"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_class_signature = "separated"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # "Attributes:" as fields: a NamedTuple's fields are not documented twice

html_theme = "furo"
html_title = "torchrec_eval"
