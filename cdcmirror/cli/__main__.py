"""``python -m cdcmirror.cli``."""

from cdcmirror.cli import main

main()
