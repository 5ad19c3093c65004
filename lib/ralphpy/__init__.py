"""ralphpy: the library behind ralph.py. One concern per module; see README "Layout"."""

__version__ = "0.1.0"

__all__ = ["__version__"]
