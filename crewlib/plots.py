"""Plots the notebooks draw more than once."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from crewlib.env.workspace import Action

ACTION_COLOURS = ["#4C72B0", "#55A868", "#C44E52", "#8172B2"]  # retrieve, disseminate, compose, critique


def plot_actions(trace, ax: plt.Axes, title: str = "") -> None:
    """Agents × rounds chart of the actions taken (one colour per action)."""
    matrix = np.array(trace.actions_matrix).T  # agents × rounds
    ax.imshow(matrix, cmap=ListedColormap(ACTION_COLOURS), vmin=-0.5, vmax=3.5, aspect="auto")
    ax.set_xticks(range(matrix.shape[1]), [str(t + 1) for t in range(matrix.shape[1])])
    ax.set_yticks(range(matrix.shape[0]), [f"agent {i}" for i in range(matrix.shape[0])])
    ax.set_xlabel("round")
    ax.legend(handles=[Patch(color=c, label=a.name.lower()) for a, c in zip(Action, ACTION_COLOURS, strict=True)],
              loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=4, frameon=False)
    ax.set_title(title)


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
    ax.set_title(title)
