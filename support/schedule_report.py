"""Where a run's time went, per test file: on which xdist worker it ran, when it started and
ended, and the sum of its tests' durations (setup and teardown included). Printed at the end
of `make test` so that CI's time can be cut where it is spent: the files are on two
workers, each file on one, and the run ends when the last file does.

Loaded by ``integration_tests/conftest.py``; the controller (or a run without xdist) gets
every test's reports and prints the table.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass
class FileTime:
    worker: str
    start: float
    stop: float
    seconds: float = 0.0


def spans(reports: list[tuple[str, str, float, float, float]]) -> dict[str, FileTime]:
    """``reports``: (nodeid, worker, start, stop, duration) of each test phase; per file,
    its worker(s), first start, last stop and summed durations.

    >>> r = [("a.py::t1", "gw0", 10.0, 12.0, 2.0), ("b.py::t", "gw1", 10.0, 11.0, 1.0),
    ...      ("a.py::t2", "gw0", 12.0, 15.5, 3.5)]
    >>> s = spans(r)
    >>> s["a.py"]
    FileTime(worker='gw0', start=10.0, stop=15.5, seconds=5.5)
    >>> s["b.py"].seconds
    1.0
    """
    out: dict[str, FileTime] = {}
    for nodeid, worker, start, stop, duration in reports:
        name = nodeid.split("::", 1)[0]
        span = out.setdefault(name, FileTime(worker, start, stop))
        if worker not in span.worker.split(","):
            span.worker += f",{worker}"
        span.start = min(span.start, start)
        span.stop = max(span.stop, stop)
        span.seconds += duration
    return out


def table(files: dict[str, FileTime], at_least: float = 20.0) -> list[str]:
    """The files whose tests took ``at_least`` seconds, longest first, with their times
    from the run's first start; then each worker's total.

    >>> files = {"a.py": FileTime("gw0", 100.0, 400.0, 290.0),
    ...          "b.py": FileTime("gw1", 100.0, 130.0, 25.0),
    ...          "c.py": FileTime("gw1", 130.0, 131.0, 1.0)}
    >>> print("\\n".join(table(files)))
      seconds  start    end  worker  file
          290      0    300  gw0     a.py
           25      0     30  gw1     b.py
    worker gw0: 290 s of tests, last end at 300 s
    worker gw1: 26 s of tests, last end at 31 s
    """
    if not files:
        return []
    origin = min(f.start for f in files.values())
    lines = ["  seconds  start    end  worker  file"]
    for name, f in sorted(files.items(), key=lambda kv: -kv[1].seconds):
        if f.seconds >= at_least:
            lines.append(
                f"{f.seconds:9.0f} {f.start - origin:6.0f} {f.stop - origin:6.0f}  "
                f"{f.worker:6s}  {name}"
            )
    for worker in sorted({w for f in files.values() for w in f.worker.split(",")}):
        mine = [f for f in files.values() if worker in f.worker.split(",")]
        lines.append(
            f"worker {worker}: {sum(f.seconds for f in mine):.0f} s of tests, "
            f"last end at {max(f.stop for f in mine) - origin:.0f} s"
        )
    return lines


class ScheduleReport:
    """The pytest plugin: collects each phase's report, prints ``table`` at the end."""

    def __init__(self) -> None:
        self.reports: list[tuple[str, str, float, float, float]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        node = getattr(report, "node", None)  # the xdist worker that ran it
        worker = str(getattr(node, "gateway", None) and node.gateway.id) if node else "main"
        start, stop = getattr(report, "start", 0.0), getattr(report, "stop", 0.0)
        self.reports.append((report.nodeid, worker, start, stop, report.duration))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        lines = table(spans(self.reports))
        if lines:
            terminalreporter.section("time per test file")
            for line in lines:
                terminalreporter.write_line(line)
