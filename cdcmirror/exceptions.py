"""Every error cdcmirror raises on purpose, with the exit code the CLI turns it into.

Exit codes (DESIGN.md): 0 ok, 1 drift / data problem found, 2 bad usage or configuration.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_DRIFT = 1
EXIT_USAGE = 2


class CdcMirrorError(Exception):
    """Base class: a message meant for the user, and the exit code to leave with."""

    exit_code = EXIT_USAGE


class ConfigError(CdcMirrorError):
    """The configuration file or an override is missing, malformed or names an unknown key."""


class LeaseHeldError(ConfigError):
    """Another cdcmirror job holds the table's mirror lease."""


class ServiceUnavailableError(CdcMirrorError):
    """A service cdcmirror needs (database, Kafka, Kafka Connect) cannot be reached."""

    transient = True


class ArtifactResolutionError(CdcMirrorError):
    """A JVM artefact of the manifest could not be resolved from Maven Central."""


class StackError(CdcMirrorError):
    """The local Kafka / Kafka Connect stack could not be started, checked or stopped."""


class PortInUseError(StackError):
    """A port the stack needs is taken by a process cdcmirror did not start."""


class ConnectorError(CdcMirrorError):
    """Kafka Connect refused a connector config or reports the connector failed."""


class DriftError(CdcMirrorError):
    """The mirror does not match its source."""

    exit_code = EXIT_DRIFT


class UnsupportedTypeError(CdcMirrorError):
    """A source column has a type cdcmirror cannot map to Iceberg."""


class NotLoadableError(UnsupportedTypeError):
    """A column whose value, or a table whose rows, the initial load by Spark cannot produce
    exactly as the stream."""


class SourceError(CdcMirrorError):
    """The source database refused the connection, or its catalog is not what cdcmirror needs."""


class MirrorError(CdcMirrorError):
    """The mirror cannot apply a batch (the message names the table and offsets)."""
