"""The person at the terminal during a live run: progress lines on stderr, the Ctrl-C that ends
the window early, and password prompts (only when stdin is a terminal)."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any, Callable, TextIO

from esxdiag.terminal import safe_text


class Progress:
    """What is being collected and how long the window has left, on stderr."""

    def __init__(self, stream: TextIO = sys.stderr):
        self.stream = stream
        self.tty = stream.isatty()
        self._last = 0.0

    def step(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
        print(f"esxdiag: {safe_text(text)}", file=self.stream, flush=True)

    def wait(self, what: str, elapsed: float, total: float) -> None:
        left = max(0.0, total - elapsed)
        if self.tty:
            self.stream.write(f"\r\033[Kesxdiag: {safe_text(what)}: {left:.0f} s left")
            self.stream.flush()
        elif elapsed - self._last >= 10 or elapsed < self._last:
            self._last = elapsed
            print(f"esxdiag: {safe_text(what)}: {left:.0f} s left", file=self.stream, flush=True)


def terminal_prompt() -> Callable[[str], str] | None:
    """getpass when a person is at a terminal (SSH passwords, as ssh itself asks), else None."""
    if not sys.stdin.isatty():
        return None
    import getpass

    return getpass.getpass


class FirstCtrlC:
    """Inside the block the first SIGINT only sets ``pressed`` (the window ends early, the end
    samples are still taken); a second one raises KeyboardInterrupt as usual. Outside the main
    thread (a fleet worker) signals cannot be caught here and nothing changes."""

    def __init__(self, progress: Progress):
        self.progress, self.pressed = progress, False
        self._old: Any = None  # the SIGINT handler before ours, put back on exit

    def __enter__(self) -> "FirstCtrlC":
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._first)
        return self

    def _first(self, signum: int, frame: object) -> None:
        self.pressed = True
        signal.signal(signal.SIGINT, signal.default_int_handler)
        self.progress.step("Ctrl-C: ending the window now and taking the end samples (Ctrl-C again aborts)")

    def __exit__(self, *exc: object) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
