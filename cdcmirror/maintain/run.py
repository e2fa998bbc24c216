"""What a maintenance run is asked (``[maintain]``) and what it did to each table. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from cdcmirror.config.settings import Maintain


@dataclass(frozen=True)
class MaintainSettings:
    """The ``[maintain]`` settings a run's Spark steps read, with the table's position length."""

    target_file_size_mb: int
    min_input_files: int
    snapshot_retention_hours: float
    retain_last: int
    orphan_age_hours: float
    # tombstones older than this pruned (``spark/maintenance/prune.py``); 0: kept for ever
    tombstone_retention_hours: float
    position_length: int  # the source part of a position (``positions.source_length``)

    @classmethod
    def of(cls, section: Maintain, position_length: int) -> MaintainSettings:
        return cls(
            target_file_size_mb=section.target_file_size_mb,
            min_input_files=section.min_input_files,
            snapshot_retention_hours=float(section.snapshot_retention_hours),
            retain_last=section.retain_last,
            orphan_age_hours=float(section.orphan_age_hours),
            tombstone_retention_hours=float(section.tombstone_retention_hours),
            position_length=position_length,
        )


@dataclass
class FileCounts:
    data_files: int = 0
    data_bytes: int = 0
    delete_files: int = 0
    delete_bytes: int = 0
    snapshots: int = 0

    @property
    def files(self) -> int:
        return self.data_files + self.delete_files


@dataclass
class TableMaintenance:
    table: str
    before: FileCounts
    after: FileCounts
    rewritten_data_files: int = 0
    rewritten_delete_files: int = 0
    expired_snapshots: int = 0
    orphans_removed: int = 0
    tombstones_pruned: int = 0
