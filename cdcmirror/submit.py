"""The Python entry point for ``spark-submit``; ``cdcmirror jars submit`` prints its path
with the ``--jars`` it needs::

    spark-submit --master spark://host:7077 $(cdcmirror jars submit) --config cdcmirror.toml mirror

Everything after this file's path is cdcmirror's command line. spark-submit runs the file
as a script, which puts its directory first on ``sys.path``; that directory (the package's
own) is taken off again so that no module of the package shadows a top-level one.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

from cdcmirror.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
