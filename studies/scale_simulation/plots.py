"""The report's plots: recall against latency per scale, resident memory by kind, and the
generator's fit check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from studies.scale_simulation.units import GIB, human


def plot_all(results: dict[str, Any], fit: dict[str, Any], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made: list[str] = []
    for key, scale in results.items():
        fig, ax = plt.subplots(figsize=(8, 5.5))
        for name, entry in scale["kinds"].items():
            pts = entry.get("points")
            if not pts:
                continue
            xs = [pt["p50_ms"] for pt in pts]
            ys = [pt["recall_at_10"] for pt in pts]
            ax.plot(xs, ys, marker="o", markersize=4, label=name)
            if len(pts) > 1:
                for pt, x, y in zip(
                    (pts[0], pts[-1]), (xs[0], xs[-1]), (ys[0], ys[-1]), strict=True
                ):
                    ax.annotate(
                        str(pt["param"]),
                        (x, y),
                        textcoords="offset points",
                        xytext=(4, -10),
                        fontsize=7,
                        color="0.3",
                    )
        ax.set_xscale("log")
        ax.set_xlabel("p50 single-query latency, 1 thread (ms, log scale)")
        ax.set_ylabel("recall@10 (tie-aware)")
        ax.set_ylim(0, 1.03)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(
            f"n = {int(key):,}, dim 384, inner product (labels: first/last nprobe/efSearch)"
        )
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        name = f"recall_vs_latency_{human(int(key))}.png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        made.append(name)

    # memory by kind
    bars: list[tuple[str, float, float, float]] = []
    for key, scale in results.items():
        for name, entry in scale["kinds"].items():
            mem = entry.get("memory")
            size = entry.get("build", {}).get("size_bytes", 0) / GIB
            if mem is None:
                continue
            base = mem["baseline"]["anon"]
            anon = max(0, mem["after_queries"]["anon"] - base) / GIB
            file_rss = mem["after_queries"]["index_file_rss"] / GIB
            bars.append((f"{human(int(key))} {name}", anon, file_rss, size))
    if bars:
        fig, ax = plt.subplots(figsize=(10, 0.42 * len(bars) + 2.4))
        y = np.arange(len(bars))
        anon = [b[1] for b in bars]
        filed = [b[2] for b in bars]
        ax.barh(y, anon, color="tab:blue", label="anonymous RSS (index in process memory)")
        ax.barh(
            y, filed, left=anon, color="tab:orange", label="file-backed RSS (mmap / page cache)"
        )
        ax.scatter(
            [b[3] for b in bars], y, marker="|", s=200, color="k", label="index size on disk"
        )
        ax.set_yticks(y, [b[0] for b in bars], fontsize=8)
        ax.invert_yaxis()
        right = max(max(b[1] + b[2] for b in bars), max(b[3] for b in bars))
        ax.set_xlim(0, right * 1.08 if right > 0 else 1)
        ax.set_xlabel("GiB (after the queries, baseline process subtracted)")
        ax.set_title("Resident memory of the serving process by index kind")
        ax.legend(
            fontsize=8,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.12 - 1.2 / len(bars)),
            ncol=3,
            frameon=False,
        )
        ax.grid(True, axis="x", alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "memory_by_kind.png", dpi=110)
        plt.close(fig)
        made.append("memory_by_kind.png")

    if fit:
        fig, axes = plt.subplots(2, 2, figsize=(11, 8))
        colours = {"real (held out)": "tab:blue", "synthetic": "tab:orange", "uniform noise": "0.5"}
        for name, s in fit["sets"].items():
            c = colours.get(name)
            axes[0, 0].hist(
                s["nn_cos"],
                bins=60,
                range=(-0.1, 1.0),
                histtype="step",
                density=True,
                color=c,
                label=name,
                linewidth=1.5,
            )
            axes[0, 1].hist(
                s["pair_cos"],
                bins=60,
                range=(-0.3, 1.0),
                histtype="step",
                density=True,
                color=c,
                label=name,
                linewidth=1.5,
            )
            spec = s["spectrum"]
            axes[1, 0].plot(range(1, len(spec) + 1), np.cumsum(spec), color=c, label=name)
            curve = s["ivf_recall"]
            axes[1, 1].plot(
                [int(k2) for k2 in curve], list(curve.values()), marker="o", color=c, label=name
            )
        axes[0, 0].set(
            title=f"nearest-neighbour cosine ({fit['holdout_rows']:,} rows each)",
            xlabel="cosine",
            ylabel="density",
        )
        axes[0, 1].set(title="cosine of random pairs", xlabel="cosine", ylabel="density")
        axes[1, 0].set(
            title="explained variance (cumulative, top 64 PCs)",
            xlabel="principal component",
            ylabel="fraction of variance",
        )
        axes[1, 1].set(
            title=f"IVF{fit['ivf']['nlist']},Flat recall@10 "
            f"({fit['ivf']['database']:,} db, {fit['ivf']['queries']:,} queries)",
            xlabel="nprobe",
            ylabel="recall@10",
            xscale="log",
            ylim=(0, 1.02),
        )
        axes[1, 1].set_xticks([1, 2, 4, 8, 16], ["1", "2", "4", "8", "16"])
        for ax in axes.ravel():
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(
            f"Generator fit check: k={fit['clusters']} clusters, rank {fit['rank']}, "
            f"residual spread x{fit.get('spread', 1.0):g}"
        )
        fig.tight_layout()
        fig.savefig(out / "fit_check.png", dpi=100)
        plt.close(fig)
        made.append("fit_check.png")
    return made
