"""Plots the notebooks draw more than once."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch

from crewlib.actions import Action

ACTION_COLOURS = ["#4C72B0", "#55A868", "#C44E52", "#8172B2"]  # retrieve, disseminate, compose, critique


def _title(ax: plt.Axes, title: str) -> None:
    """A title wrapped to the axes' width, so a long one (model name, annotator label) is never cut off."""
    width_in = ax.get_position().width * ax.figure.get_figwidth()
    points = FontProperties(size=plt.rcParams["axes.titlesize"]).get_size_in_points()
    chars = max(30, int(width_in * 72 / (0.55 * points)))  # an average character is about 0.55 em wide
    ax.set_title("\n".join(textwrap.fill(line, chars) for line in title.split("\n")))


def plot_actions(trace, ax: plt.Axes, title: str = "") -> None:
    """Agents × rounds chart of the actions taken (one colour per action)."""
    matrix = np.array(trace.actions_matrix).T  # agents × rounds
    ax.imshow(matrix, cmap=ListedColormap(ACTION_COLOURS), vmin=-0.5, vmax=3.5, aspect="auto")
    ax.set_xticks(range(matrix.shape[1]), [str(t + 1) for t in range(matrix.shape[1])])
    ax.set_yticks(range(matrix.shape[0]), [f"agent {i}" for i in range(matrix.shape[0])])
    ax.set_xlabel("round")
    ax.legend(handles=[Patch(color=c, label=a.name.lower()) for a, c in zip(Action, ACTION_COLOURS, strict=True)],
              loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=4, frameon=False)
    _title(ax, title)


def plot_reward_terms(trace, ax: plt.Axes, title: str = "") -> None:
    """The reward's components and total per round, and the draft quality."""
    rounds = [r["t"] for r in trace.rounds]
    for key, label in [("d_draft", "Δ draft quality"), ("d_local", "Δ local knowledge"),
                       ("d_global", "Δ global knowledge"), ("q_feedback", "feedback term")]:
        ax.plot(rounds, [r["reward"][key] for r in trace.rounds], marker=".", label=label)
    ax.plot(rounds, [r["reward"]["total"] for r in trace.rounds], color="black", lw=2, label="team reward")
    ax.plot(rounds, [r["quality"]["draft"] for r in trace.rounds], color="grey", ls="--", label="draft quality")
    ax.axhline(0, color="#bbb", lw=0.8)
    ax.set_xlabel("round")
    ax.legend(fontsize=7, ncol=2)
    _title(ax, title)


def plot_quality_vs_tokens(points, ax: plt.Axes, title: str = "") -> None:
    """Mean quality (with its 95% CI) against mean tokens per section, one labelled point per system.

    ``points``: :func:`crewlib.experiments.main_results.quality_vs_tokens`'s table.
    """
    for _, p in points.iterrows():
        low = p["quality"] - p["ci_low"] if np.isfinite(p["ci_low"]) else 0.0
        high = p["ci_high"] - p["quality"] if np.isfinite(p["ci_high"]) else 0.0
        ax.errorbar(p["tokens"], p["quality"], yerr=[[low], [high]], fmt="o", capsize=4,
                    color="#C44E52" if p["system"] == "crew" else "#4C72B0")
        ax.annotate(p["system"], (p["tokens"], p["quality"]), textcoords="offset points", xytext=(6, 4), fontsize=8)
    metrics = sorted(set(points["metric"])) if len(points) else []
    ax.set_xlabel("tokens per section (in + out, mean)")
    ax.set_ylabel(" / ".join(m.replace("_", " ") for m in metrics) or "quality")
    ax.set_xscale("symlog", linthresh=1000)
    ax.grid(alpha=0.3)
    _title(ax, title)


def plot_discrimination(table, ax: plt.Axes, title: str = "") -> None:
    """Share of (gold, damaged) pairs each instrument ranks correctly, per damage (cell text: correct / ties).

    ``table``: :class:`crewlib.experiments.discrimination.InstrumentCheck`'s table for one judge (``instrument,
    damage, pairs, correct, ties``); the composites are the last rows.
    """
    last = ("composite without the LLM", "composite")  # the composites at the bottom, below a line
    order = lambda i: (i in last, i.split(":")[0] != "judge", i.split(":")[0] != "pairwise", i)  # noqa: E731
    instruments = sorted(dict.fromkeys(table["instrument"]), key=order)
    damages = list(dict.fromkeys(table["damage"]))
    grid = table.pivot_table(index="instrument", columns="damage", values="correct").reindex(instruments)[damages]
    ties = table.pivot_table(index="instrument", columns="damage", values="ties").reindex(instruments)[damages]
    ax.imshow(grid.to_numpy(dtype=float), cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
    for i in range(len(instruments)):
        for j in range(len(damages)):
            value, tie = grid.iat[i, j], ties.iat[i, j]
            if np.isfinite(value):
                ax.text(j, i, f"{value:.2f}" + (f"\n({tie:.2f})" if tie else ""), ha="center", va="center",
                        fontsize=6.5)
    ax.set_xticks(range(len(damages)), [d.replace("_", "\n") for d in damages], fontsize=7)
    ax.set_yticks(range(len(instruments)), [i.replace("_", " ") for i in instruments], fontsize=8)
    ax.axhline(len(instruments) - sum(i in last for i in instruments) - 0.5, color="black", lw=1.2)
    ax.set_xlabel("damage (cell: share of pairs with the gold ranked above; in brackets: ties)")
    _title(ax, title)


def discrimination_figure(table) -> plt.Figure:
    """One :func:`plot_discrimination` panel per discrimination set and judge (``table``: an InstrumentCheck's
    table, with a ``papers`` column when several sets were measured)."""
    keys = ["papers", "judge"] if "papers" in table else ["judge"]
    groups = list(table.groupby(keys, sort=False))
    rows = [part.instrument.nunique() for _, part in groups]  # each panel as tall as its instruments need
    fig, axes = plt.subplots(len(groups), 1, figsize=(12, sum(0.32 * r + 1.6 for r in rows)), squeeze=False,
                             gridspec_kw={"height_ratios": [0.32 * r + 1.6 for r in rows]})
    for ax, (key, part) in zip(axes[:, 0], groups, strict=True):
        names = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        pairs = part.groupby("damage").pairs.max().sum()
        papers = f"papers: {names['papers']} ({pairs} pairs), " if "papers" in names else ""
        plot_discrimination(part, ax, f"{papers}judge {names['judge']}")
    fig.tight_layout()
    return fig


def plot_win_tie_loss(table, ax: plt.Axes, title: str = "", label: str = "") -> None:
    """Stacked win / tie / loss shares per dimension with the win share's CI (``human_stats.win_tie_loss``)."""
    dims = list(table["dimension"])
    y = np.arange(len(dims))
    left = np.zeros(len(dims))
    for column, colour in [("win", "#55A868"), ("tie", "#bbbbbb"), ("loss", "#C44E52")]:
        ax.barh(y, table[column], left=left, color=colour, label=column)
        left = left + table[column].to_numpy()
    if {"win_ci_low", "win_ci_high"} <= set(table.columns):
        ax.errorbar(table["win"], y, xerr=[table["win"] - table["win_ci_low"], table["win_ci_high"] - table["win"]],
                    fmt="none", color="black", capsize=3)
    ax.set_yticks(y, dims)
    ax.set_xlim(0, 1)
    ax.axvline(0.5, color="#555", lw=0.6, ls=":")
    ax.set_xlabel(f"share of judgements{f' ({label})' if label else ''}")
    ax.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.25), frameon=False)
    _title(ax, title)


def plot_means_with_ci(summary, ax: plt.Axes, by: str, metric: str, title: str = "", highlight=None) -> None:
    """Bars of one metric's mean with its 95% CI, one per ``by`` value (a variant, a team size).

    ``summary``: long table with columns ``by, metric, mean, ci_low, ci_high``
    (:mod:`crewlib.experiments.ablations`); ``highlight``: the ``by`` value drawn in CREW's colour.
    """
    part = summary[summary["metric"] == metric]
    labels = [textwrap.fill(str(v), 14) for v in part[by]]  # long variant names on two or three lines
    low = (part["mean"] - part["ci_low"]).fillna(0).clip(lower=0)
    high = (part["ci_high"] - part["mean"]).fillna(0).clip(lower=0)
    colours = ["#C44E52" if v == highlight else "#4C72B0" for v in part[by]]
    ax.bar(labels, part["mean"], yerr=[low, high], capsize=5, color=colours)
    ax.set_ylabel(metric)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="y", alpha=0.3)
    _title(ax, title)


def plot_action_shares(shares, ax: plt.Axes, title: str = "") -> None:
    """Stacked share of each action per row of ``shares`` (rows: variants; columns: the four actions)."""
    left = np.zeros(len(shares))
    y = np.arange(len(shares))
    for i, action in enumerate(shares.columns):
        ax.barh(y, shares[action], left=left, color=ACTION_COLOURS[i % len(ACTION_COLOURS)], label=action)
        left = left + shares[action].to_numpy()
    ax.set_yticks(y, [str(v) for v in shares.index])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of agent-rounds")
    ax.legend(fontsize=8, ncol=len(shares.columns), loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    _title(ax, title)


def plot_valid_questions(valid, ax: plt.Axes, title: str = "") -> None:
    """SQ2E's Figure 3: valid questions per document, one group of bars per dataset, one bar per role.

    ``valid``: :meth:`crewlib.experiments.sq2e.SQ2EResults.valid_questions` (asked beside, hatched).
    """
    datasets = list(dict.fromkeys(valid["dataset"]))
    roles = list(dict.fromkeys(valid["role"]))
    x = np.arange(len(datasets))
    width = 0.8 / max(len(roles), 1)
    for i, role in enumerate(roles):
        part = valid[valid["role"] == role].set_index("dataset").reindex(datasets)
        offset = x + (i - (len(roles) - 1) / 2) * width
        ax.bar(offset, part["asked"] / part["documents"], width, color="none", edgecolor=ACTION_COLOURS[i],
               hatch="//", label=f"{role}: asked")
        ax.bar(offset, part["valid per document"], width * 0.7, color=ACTION_COLOURS[i], label=f"{role}: valid")
    ax.set_xticks(x, datasets)
    ax.set_ylabel("questions per document")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(axis="y", alpha=0.3)
    _title(ax, title)
