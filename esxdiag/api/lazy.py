"""pandas, imported only when a DataFrame is asked for: the command line never pays for it
(importing pandas costs ~50-100 MB and ~0.4 s here)."""

from __future__ import annotations

from types import ModuleType

from esxdiag.errors import EsxdiagError


class PandasMissing(EsxdiagError, ImportError):
    """A DataFrame was asked for and pandas is not installed: ``pip install 'esxdiag[pandas]'``."""


def pandas() -> ModuleType:
    try:
        import pandas
    except ImportError as exc:
        raise PandasMissing(f"esxdiag DataFrames need pandas, which is not installed ({exc}): "
                            "pip install 'esxdiag[pandas]'") from None
    return pandas
