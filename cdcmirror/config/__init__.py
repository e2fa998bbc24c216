"""The configuration: every setting declared once (``settings.py``), loaded from the TOML
file and the environment (``load.py``), any key read from a file (``files.py``), masked
when printed (``masking.py``), and written out for each client that needs it
(``kafka_security.py``, ``catalog.py``, ``s3a.py``)."""

from cdcmirror.config.load import DEFAULT_CONFIG_FILE, ENV_PREFIX, Config, load_config
from cdcmirror.config.settings import STREAMS

__all__ = ["DEFAULT_CONFIG_FILE", "ENV_PREFIX", "STREAMS", "Config", "load_config"]
