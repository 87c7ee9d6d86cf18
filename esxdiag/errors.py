"""Errors and exit codes shared by every command.

Exit codes (documented in the README):
  0  ran; no finding at or above --fail-on
  1  ran; a finding at or above --fail-on severity
  2  bad input: unreadable/unparseable file, bad bundle, bad usage
  3  collection could not reach what it needed (vCenter, VM, host); a partial bundle may exist
  130 interrupted (Ctrl-C); a partial bundle is written
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_BAD_INPUT = 2
EXIT_COLLECTION = 3
EXIT_INTERRUPTED = 130


class EsxdiagError(Exception):
    """Base class: carries a one-line, user-facing message and an exit code."""

    exit_code = EXIT_BAD_INPUT

    def one_line(self) -> str:
        return " ".join(str(self).split())


class ParseError(EsxdiagError):
    """A capture is unusable. ``file`` is filled in by whoever knows it (the loader or CLI)."""

    def __init__(self, why: str, line: int | None = None, file: str | None = None):
        self.why = why
        self.line = line
        self.file = file
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.file or "<input>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.why}"

    def with_file(self, file: str) -> "ParseError":
        self.file = file
        self.args = (self._render(),)
        return self


class NoData(EsxdiagError):
    """The command ran but had nothing to report (e.g. no vmxnet3 stats, VM not in esxtop)."""

    def __init__(self, why: str, file: str | None = None):
        self.why = why
        self.file = file
        super().__init__(f"{file or '<input>'}: no data: {why}")

    def with_file(self, file: str) -> "NoData":
        self.file = file
        self.args = (f"{file}: no data: {self.why}",)
        return self


class BundleError(EsxdiagError):
    """The bundle directory or its manifest is unusable."""


class CollectionError(EsxdiagError):
    """A target (vCenter, host, guest) could not be reached or queried."""

    exit_code = EXIT_COLLECTION

    def __init__(self, message: str, kind: str = "error"):
        self.kind = kind  # timeout, auth, not-found, refused, host-key, permission, ...
        super().__init__(message)
