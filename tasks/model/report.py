"""What a training reports: its outcome (one summary line, a markdown table of the candidates) and each
candidate's residual figure (logged with its run by tasks.model.registry)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure

from tasks.model.design import tokens_per_sec
from tasks.model.evaluation import TrainingData
from tasks.model.intervals import IntervalOffsets

if TYPE_CHECKING:
    from tasks.model.pipeline import CandidateEvaluation


@dataclass
class TrainingOutcome:
    version: str
    alias: str                                     # champion or challenger
    reason: str
    best: str                                      # winning candidate name
    scores: dict[str, float]                       # candidate -> selection score
    median_ape: dict[str, dict[str, float]]        # candidate -> grouping -> pooled median APE
    coverage: dict[str, float]                     # best candidate: grouping -> cross-fold coverage
    intervals: IntervalOffsets
    champion_rescored: float | None
    rows: int
    digest: str
    run_id: str
    wall_seconds: float

    registered: bool = True                        # False: identical to `version`, nothing registered

    def summary_line(self) -> str:
        if not self.registered:
            return f"train: no new version ({self.best}): {self.reason}"
        return f"train: version {self.version} -> {self.alias} ({self.best}): {self.reason}"

    def markdown(self) -> str:
        groupings = list(next(iter(self.median_ape.values())).keys())
        title = (f"version {self.version} -> `{self.alias}`" if self.registered
                 else f"no new version (v{self.version} is identical)")
        lines = [f"## Training: {title}", "", self.reason, "",
                 "| candidate | score | " + " | ".join(f"median APE ({g} CV)" for g in groupings) + " |",
                 "|---|---:|" + "---:|" * len(groupings)]
        for name, score in sorted(self.scores.items(), key=lambda item: item[1]):
            apes = " | ".join(f"{self.median_ape[name][g]:.1%}" for g in groupings)
            lines.append(f"| {name}{' (best)' if name == self.best else ''} | {score:.4f} | {apes} |")
        cover = ", ".join(f"{g}: {c:.1%}" for g, c in self.coverage.items())
        lines += ["", f"{self.intervals.level:.0%} interval coverage on held-out folds ({cover}); "
                  f"{self.rows} training rows; {self.wall_seconds:.1f} s."]
        return "\n".join(lines)


def residual_figure(evaluation: CandidateEvaluation, data: TrainingData) -> Figure:
    """Per grouping: out-of-fold predicted vs measured tokens/s/GPU (log-log), coloured by held-out group."""
    # "tight" is one layout pass at save time; "constrained" solves a layout per draw and was most of the cost
    figure = Figure(figsize=(6 * len(evaluation.cv), 5), layout="tight")
    axes = figure.subplots(1, len(evaluation.cv), squeeze=False)[0]
    for ax, (grouping, result) in zip(axes, evaluation.cv.items(), strict=True):
        predicted = tokens_per_sec(result.oof_log_mfu, data.physics_bound)
        for fold in result.folds:
            ax.scatter(data.tokens_per_sec[fold.test], predicted[fold.test], s=12, alpha=0.7, label=fold.held_out)
        low, high = float(np.min(data.tokens_per_sec)) * 0.5, float(np.max(data.tokens_per_sec)) * 2
        ax.plot([low, high], [low, high], color="black", linewidth=1)
        ax.set(xscale="log", yscale="log", xlabel="measured tokens/s per GPU", ylabel="predicted (out of fold)",
               title=f"{evaluation.spec.name}: leave one {grouping} out, "
                     f"median APE {result.pooled['median_ape']:.1%}")
        ax.legend(fontsize=7, loc="upper left")
    return figure
