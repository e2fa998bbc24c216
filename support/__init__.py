"""What the tests and benchmarks share: the services and workloads of the integration tests,
the recorded events and tables of the local Spark tests, the scenarios, and the fixtures'
data (``fixtures/``). No test module imports another; each imports from here."""

from pathlib import Path

FIXTURES_DIR = Path(__file__).resolve().parent / "fixtures"
