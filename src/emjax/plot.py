"""Figure helpers shared by the methods' plots (``emjax.<method>.plot``); names no method.

matplotlib is imported inside the functions and figures are drawn on an Agg canvas without
pyplot, so plotting never changes the user's backend or global pyplot state.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["new_figure", "save_figure"]


def new_figure(figsize: tuple[float, float], layout: str = "constrained"):
    """A matplotlib ``Figure`` on its own Agg canvas (no pyplot, no global state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig, path, dpi: int = 100) -> Path:
    """Write ``fig`` as PNG to ``path`` (its folder created if missing); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=dpi)
    return path
