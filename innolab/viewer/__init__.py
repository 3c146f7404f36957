"""Looking at runs: RunView and SweepView for JupyterLab, and a run as one self-contained page."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from innolab.viewer.views import RunView, SweepView

__all__ = ["RunView", "SweepView", "export_html", "load_run"]


def __getattr__(name: str) -> Any:
    """Import the views (and with them ipywidgets) only when asked for: the CLI's export needs none.

    Args:
        name: The attribute asked for.

    Returns:
        RunView, SweepView, export_html or load_run.

    Raises:
        AttributeError: Another name.
    """
    if name in ("RunView", "SweepView"):
        from innolab.viewer import views

        return getattr(views, name)
    if name == "export_html":
        from innolab.viewer.export import export_html

        return export_html
    if name == "load_run":
        from innolab.viewer.model import load_run

        return load_run
    raise AttributeError(name)
