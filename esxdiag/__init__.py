"""esxdiag: ESXi/vSphere VM network and CPU health diagnostics."""

__version__ = "0.1.0"
