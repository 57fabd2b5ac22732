"""A comparison's table as ranx's ``compare`` prints it: each model's value of each metric, in boldface where it is
the best, with a superscript letter for every model it is significantly better than; as text, Markdown,
LaTeX or a pandas ``DataFrame``.

:meth:`ModelComparison.report <torchrec_eval.ModelComparison.report>` builds one from a comparison's results;
``torchrec-eval compare`` prints one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from torchrec_eval.metrics.families import families
from torchrec_eval.pipeline.arguments import check_probability

__all__ = ["ComparisonReport"]

_SUPERSCRIPTS = dict(zip("abcdefghijklmnopqrstuvwxyz0123456789", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖᑫʳˢᵗᵘᵛʷˣʸᶻ⁰¹²³⁴⁵⁶⁷⁸⁹", strict=True))


@dataclass(frozen=True)
class ComparisonReport:
    """Each model's value of each metric and the models it is significantly better than.

    Attributes:
        models: the model names, in the comparison's order; model ``i`` is labelled ``labels[i]``.
        keys: the metric keys (columns).
        values: ``values[key][model]``, the model's mean.
        better_than: ``better_than[key][model]``, the models it is significantly better than: a pair's
            (adjusted, where the comparison adjusts) p-value below ``alpha``, and a mean difference in the
            metric's better direction.
        alpha: the significance level.
        note: what the superscripts mean (the test, the correction, ``alpha``).
        digits: the digits shown.
    """

    models: list[str]
    keys: list[str]
    values: dict[str, dict[str, float]]
    better_than: dict[str, dict[str, list[str]]]
    alpha: float
    note: str
    digits: int = 3

    @classmethod
    def from_results(cls, results: Mapping[str, Any], *, models: Sequence[str], keys: Sequence[str], alpha: float,
                     note: str = "", digits: int = 3) -> ComparisonReport:
        """The report of :meth:`ModelComparison.compute <torchrec_eval.ModelComparison.compute>`'s ``results``.

        Raises:
            ValueError: on an ``alpha`` outside (0, 1), ``digits`` below 0, or results without a model's value
                or a pair's p-value.
        """
        check_probability("alpha", alpha)
        if isinstance(digits, bool) or not isinstance(digits, int) or digits < 0:
            raise ValueError(f"`digits` must be an int >= 0, got {digits!r}")
        values: dict[str, dict[str, float]] = {}
        better: dict[str, dict[str, list[str]]] = {}
        for key in keys:
            values[key] = {model: float(_read(results, f"{key}/{model}")) for model in models}
            better[key] = {model: [] for model in models}
            sign = -1.0 if families()[key.partition("@")[0]].higher_is_better is False else 1.0
            for i, first in enumerate(models):
                for second in models[i + 1:]:
                    pair = f"{key}/{first}_vs_{second}"
                    adjusted = f"{pair}/p_adjusted"
                    p = float(_read(results, adjusted if adjusted in results else f"{pair}/p_value"))
                    difference = sign * float(_read(results, f"{pair}/diff"))
                    if p < alpha and difference != 0:
                        winner, loser = (first, second) if difference > 0 else (second, first)
                        better[key][winner].append(loser)
        return cls(list(models), list(keys), values, better, alpha, note, digits)

    @property
    def labels(self) -> list[str]:
        """The label of each model: a, b, c, ... (then a1, b1, ... past 26 models)."""
        letters = "abcdefghijklmnopqrstuvwxyz"
        return [letters[i % 26] + (str(i // 26) if i >= 26 else "") for i in range(len(self.models))]

    def _cells(self, bold: tuple[str, str], superscript: Any) -> list[list[str]]:
        """One row per model: label, name, then each key's value (bold where best) and its superscripts."""
        label_of = dict(zip(self.models, self.labels, strict=True))
        best = {key: _best(self.values[key], key) for key in self.keys}
        rows = []
        for model, label in zip(self.models, self.labels, strict=True):
            cells = [label, model]
            for key in self.keys:
                value = self.values[key][model]
                text = "nan" if math.isnan(value) else f"{value:.{self.digits}f}"
                if value == best[key]:
                    text = f"{bold[0]}{text}{bold[1]}"
                marks = "".join(label_of[other] for other in self.better_than[key][model])
                cells.append(text + (superscript(marks) if marks else ""))
            rows.append(cells)
        return rows

    def __str__(self) -> str:
        header = ["#", "Model", *self.keys]
        rows = self._cells(("", ""), lambda marks: "".join(_SUPERSCRIPTS.get(c, c) for c in marks))
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
                 for row in [header, ["-" * width for width in widths], *rows]]
        return "\n".join(lines + ([self.note] if self.note else []))

    def to_markdown(self) -> str:
        """A Markdown table (the best value of each column in bold, superscripts as ``<sup>``)."""
        rows = self._cells(("**", "**"), lambda marks: f"<sup>{marks}</sup>")
        header = ["#", "Model", *self.keys]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines + (["", self.note] if self.note else []))

    def to_latex(self) -> str:
        """A LaTeX ``table`` (booktabs rules; the best value of each column in ``\\textbf``)."""
        rows = self._cells(("\\textbf{", "}"), lambda marks: f"$^{{{marks}}}$")
        header = ["\\#", "Model", *(_latex(key) for key in self.keys)]
        body = [" & ".join([row[0], _latex(row[1]), *row[2:]]) + " \\\\" for row in rows]
        caption = f"\\caption{{{_latex(self.note)}}}\n" if self.note else ""
        return (f"\\begin{{table}}[ht]\n\\centering\n{caption}\\begin{{tabular}}{{cl{'c' * len(self.keys)}}}\n"
                f"\\toprule\n{' & '.join(header)} \\\\\n\\midrule\n" + "\n".join(body)
                + "\n\\bottomrule\n\\end{tabular}\n\\end{table}")

    def to_dataframe(self) -> Any:
        """A ``pandas.DataFrame`` indexed by model: each key's value, and ``"<key> better than"`` (the labels).

        Raises:
            ImportError: when pandas is not installed.
        """
        try:
            import pandas as pd
        except ImportError as error:
            raise ImportError("ComparisonReport.to_dataframe() needs pandas: pip install pandas") from error
        label_of = dict(zip(self.models, self.labels, strict=True))
        columns: dict[str, list[Any]] = {"label": self.labels}
        for key in self.keys:
            columns[key] = [self.values[key][model] for model in self.models]
            columns[f"{key} better than"] = ["".join(label_of[o] for o in self.better_than[key][m]) for m in self.models]
        return pd.DataFrame(columns, index=pd.Index(self.models, name="model"))


def _read(results: Mapping[str, Any], name: str) -> Any:
    if name not in results:
        raise ValueError(f"the comparison's results have no {name!r}: not the results of these models and keys")
    return results[name]


def _best(values: dict[str, float], key: str) -> float:
    finite = [value for value in values.values() if not math.isnan(value)]
    if not finite:
        return math.nan
    return min(finite) if families()[key.partition("@")[0]].higher_is_better is False else max(finite)


_LATEX = {"\\": "\\textbackslash{}", "_": "\\_", "%": "\\%", "&": "\\&", "#": "\\#", "$": "\\$", "{": "\\{",
          "}": "\\}", "^": "\\^{}", "~": "\\~{}"}


def _latex(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_LATEX.get(char, char) for char in text)
