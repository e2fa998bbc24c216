"""A batch's frame kept by the job that computes it, with an aggregate observed on the way,
and let go when the batch is done with it.

A ``localCheckpoint`` rather than a cache: every later query of the batch plans over the
kept rows, not over the plan that made them (the decode's from_json and conversions are
analysed once, not once per query: 0.1-0.2 s of a 100-event batch's planning), and the
aggregate costs no job of its own. A lost executor's blocks are not recomputed: the batch
is run again (``spark/executor_loss.py``).
"""

from __future__ import annotations

import json
import uuid
from typing import Any


def keep(df: Any, exprs: list[str]) -> tuple[Any, dict[str, Any]]:
    """``df`` computed and kept now, in one Spark job that also aggregates ``exprs``
    (``expr AS name``, numbers or text); the kept frame and the aggregate's values by name.
    The values come back as one JSON text: read from Python, each entry of an observed
    metrics map costs round trips (2.6 % of a small batch's work in a py-spy profile)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    seen = Observation(f"cdcmirror_kept_{uuid.uuid4().hex}")
    values = f"to_json(struct({', '.join(exprs)}), map('ignoreNullFields', 'false')) AS v"
    kept = df.observe(seen, F.expr(values)).localCheckpoint(eager=True)
    out: dict[str, Any] = json.loads(seen.get["v"])
    return kept, out


def let_go(kept: Any) -> None:
    """Free the blocks of a frame from ``keep`` (else they stay until the JVM collects the
    frame's objects); the frame must not be read after."""
    kept._jdf.logicalPlan().rdd().unpersist(False)
