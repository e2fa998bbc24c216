"""The streaming checkpoint's files where Spark keeps them: a local directory or an
``s3a://`` URL, read and removed through pyarrow's file systems (the only module that
touches them). Where and with which settings: ``config/s3a.py``. Beside Spark's own
files the job keeps one of its own there: the row schemas it applied
(:func:`remembered_schemas`)."""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from cdcmirror.config import Config
from cdcmirror.config.catalog import pyiceberg_properties
from cdcmirror.config.s3a import (
    arrow_s3_options,
    bucket_and_key,
    check_checkpoint_url,
    is_url,
    s3a_settings,
)
from cdcmirror.exceptions import CdcMirrorError, ServiceUnavailableError
from cdcmirror.mirror.consistent_point import Ledger
from cdcmirror.mirror.known_schemas import KnownSchemas

logger = logging.getLogger("cdcmirror.mirror")


class CheckpointFiles:
    """One checkpoint's files (``mirror/checkpoint.py`` reads its logs through this)."""

    def __init__(self, location: str, settings: dict[str, str]) -> None:
        from pyarrow import fs

        self.location = location
        self.fs: Any
        self.objects = False  # an object store (S3): no directories, a put is whole
        if location.startswith("file://"):
            self.fs, self.root = fs.LocalFileSystem(), location[len("file://") :].rstrip("/")
        elif is_url(location):
            check_checkpoint_url(location)
            self.fs, self.objects = fs.S3FileSystem(**arrow_s3_options(settings)), True
            self.root = bucket_and_key(location)
        else:
            self.fs, self.root = fs.LocalFileSystem(), location.rstrip("/")

    def _call(self, what: str, action: Any) -> Any:
        try:
            return action()
        except OSError as exc:
            raise ServiceUnavailableError(
                f"checkpoint {self.location}: cannot {what} ({exc}); check that the store "
                "answers and its settings ([spark.conf] spark.hadoop.fs.s3a.*, or the "
                "catalog's s3.* properties)"
            ) from exc

    def names(self, directory: str) -> list[str]:
        from pyarrow import fs

        selector = fs.FileSelector(f"{self.root}/{directory}", allow_not_found=True)
        infos = self._call(f"list {directory}/", lambda: self.fs.get_file_info(selector))
        return [info.base_name for info in infos]

    def read(self, relative: str) -> str:
        def read() -> str:
            with self.fs.open_input_stream(f"{self.root}/{relative}") as stream:
                return bytes(stream.read()).decode("utf-8")

        text: str = self._call(f"read {relative}", read)
        return text

    def write(self, relative: str, text: str) -> None:
        """Write ``text`` as the file ``relative`` (whole: a reader never sees a part)."""
        path = f"{self.root}/{relative}"

        def write() -> None:
            if self.objects:
                with self.fs.open_output_stream(path) as stream:
                    stream.write(text.encode("utf-8"))
                return
            self.fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
            with self.fs.open_output_stream(path + ".tmp") as stream:
                stream.write(text.encode("utf-8"))
            self.fs.move(path + ".tmp", path)

        self._call(f"write {relative}", write)

    def delete(self, relative: str) -> None:
        """Delete the file ``relative``, if it is there."""
        path = f"{self.root}/{relative}"

        def delete() -> None:
            with contextlib.suppress(FileNotFoundError):
                self.fs.delete_file(path)

        self._call(f"delete {relative}", delete)

    def exists(self) -> bool:
        from pyarrow import fs

        info = self._call("look at it", lambda: self.fs.get_file_info(self.root))
        return bool(info.type != fs.FileType.NotFound)

    def remove(self) -> None:
        """Files first, then directories deepest first: some S3 stores (Versity's posix
        backend) refuse to delete a directory object that still holds objects."""
        from pyarrow import fs

        def remove() -> None:
            infos = self.fs.get_file_info(fs.FileSelector(self.root, recursive=True))
            for info in infos:
                if info.type == fs.FileType.File:
                    self.fs.delete_file(info.path)
            directories = [i.path for i in infos if i.type == fs.FileType.Directory]
            for path in sorted(directories, key=lambda p: p.count("/"), reverse=True):
                self.fs.delete_dir(path)
            self.fs.delete_dir(self.root)

        self._call("remove it", remove)


def checkpoint_files(config: Config) -> CheckpointFiles:
    """The configured checkpoint (``mirror.checkpoint_location``)."""
    location = config.location("mirror", "checkpoint_location")
    spark_conf = {str(k): str(v) for k, v in dict(config.spark.conf).items()}
    return CheckpointFiles(location, s3a_settings(pyiceberg_properties(config), spark_conf))


SCHEMAS_FILE = "cdcmirror-row-schemas.json"


def remembered_schemas(files: CheckpointFiles) -> KnownSchemas:
    """The row schemas the job's earlier runs applied to each table
    (``mirror/known_schemas.py``), from the checkpoint, kept there as they change: a run's
    first batch of one table in them is read from Kafka once too. The file is an
    optimisation: one that cannot be read or written costs the first look, nothing else."""
    known = KnownSchemas()
    try:
        if SCHEMAS_FILE in files.names(""):
            known = KnownSchemas.from_json(files.read(SCHEMAS_FILE))
    except CdcMirrorError as exc:
        logger.warning("%s; each table's first batch takes the first look", exc)

    def save(text: str) -> None:
        try:
            files.write(SCHEMAS_FILE, text)
        except CdcMirrorError as exc:
            logger.warning("%s; the next run's first batches take the first look", exc)

    known.saved = save
    return known


class ConsistentLedgers:
    """The consistent point's ledger of each batch (``spark/consistent.LedgerStore``), kept
    in the checkpoint as ``cdcmirror-consistent/<batch id>.json``, the newest few only. Lost
    with the checkpoint: the job then starts a ledger from the point the tables name."""

    DIRECTORY = "cdcmirror-consistent"
    KEPT = 5

    def __init__(self, files: CheckpointFiles) -> None:
        self.files = files

    def _ids(self) -> list[int]:
        names = self.files.names(self.DIRECTORY)
        stems = [n.removesuffix(".json") for n in names if n.endswith(".json")]
        return sorted(int(stem) for stem in stems if stem.isdigit())

    def before(self, batch_id: int) -> Ledger | None:
        earlier = [i for i in self._ids() if i < batch_id]
        if not earlier:
            return None
        return Ledger.parse(self.files.read(f"{self.DIRECTORY}/{earlier[-1]}.json"))

    def save(self, batch_id: int, ledger: Ledger) -> None:
        self.files.write(f"{self.DIRECTORY}/{batch_id}.json", ledger.text())
        for old in self._ids()[: -self.KEPT]:
            self.files.delete(f"{self.DIRECTORY}/{old}.json")
