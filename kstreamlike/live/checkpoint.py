"""The checkpoint directory of a live job: one commit per batch, a manifest written last.

A commit ``n`` (the number of batches processed) writes, each to a temporary name and then
renamed into place:

- ``state-<n>.pickle``: the job's state (see :mod:`kstreamlike.live.plan_state`);
- ``clocks-<n>.arrow``: an Arrow IPC table, one row per partition: ``partition`` (as text),
  ``time`` (stream time or watermark), ``position`` (valid records read);
- ``manifest-<n>.json``, last: the format name and version, the pipeline fingerprint and
  description, ``batches`` (= ``n``), whether the input ``ended``, the files and the
  SHA-256 of the state file.

A commit is complete once its manifest exists; a restart reads the newest complete one
(a damaged or half-written commit is passed over). Files of older commits are removed after
a commit.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from kstreamlike.errors import CheckpointError

__all__ = ["FORMAT", "VERSION", "CheckpointStore", "Commit", "foreign"]

FORMAT = "kstreamlike-checkpoint"
"""The ``format`` of every manifest."""
VERSION = 2
"""The checkpoint format version this release writes and reads (2: the Polars path's state
holds the rows of each partition's last positions for ``duplicates="drop"``, and runs
session windows, emit on window close and ``duplicates="drop"``, whose version 1
checkpoints hold the reference interpreter's state)."""


@dataclass(frozen=True)
class Commit:
    """A complete commit read back from a checkpoint directory.

    Attributes:
        batches: how many batches the job had processed.
        ended: whether the input had ended (``finish()``).
        state: the pickled state.
    """

    batches: int
    ended: bool
    state: bytes


def _write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file, synced, then renamed."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


def foreign(where: str, theirs: str, ours: str) -> str:
    """The error message for state (``where``) written by another pipeline: the first line
    of the pipelines' descriptions that differs.

    Example:
        >>> print(foreign("state", "window 10", "window 20"))
        ... # doctest: +NORMALIZE_WHITESPACE
        state was written by a different pipeline (other windows, columns, aggregation or
        emission); start this one with another checkpoint directory.
          checkpoint: window 10
          pipeline:   window 20
    """
    differs = next(
        (
            f"\n  checkpoint: {a}\n  pipeline:   {b}"
            for a, b in zip(theirs.splitlines(), ours.splitlines(), strict=False)
            if a != b
        ),
        "",
    )
    return (
        f"{where} was written by a different pipeline (other windows, columns, aggregation "
        f"or emission); start this one with another checkpoint directory.{differs}"
    )


class CheckpointStore:
    """A checkpoint directory (created when missing).

    Example:
        >>> import tempfile
        >>> store = CheckpointStore(tempfile.mkdtemp(), fingerprint="f", description="d")
        >>> store.latest() is None
        True
        >>> store.commit(1, ended=False, state=b"s", clocks=[("0", 5, 1)])
        >>> store.latest()
        Commit(batches=1, ended=False, state=b's')
    """

    def __init__(self, directory: str | os.PathLike[str], fingerprint: str, description: str):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.fingerprint = fingerprint
        self.description = description

    def _manifests(self) -> list[tuple[int, Path]]:
        found = []
        for path in self.directory.glob("manifest-*.json"):
            number = path.stem.removeprefix("manifest-")
            if number.isdigit():
                found.append((int(number), path))
        return sorted(found, reverse=True)

    def _read(self, path: Path) -> Commit | None:
        try:
            manifest: dict[str, Any] = json.loads(path.read_text())
            state = (self.directory / manifest["files"]["state"]).read_bytes()
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if hashlib.sha256(state).hexdigest() != manifest.get("state_sha256"):
            return None
        if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
            raise CheckpointError(
                f"checkpoint {path} has format {manifest.get('format')!r} version "
                f"{manifest.get('version')!r}; this release reads {FORMAT!r} version {VERSION} "
                "only: finish the job with the release that wrote it, or start it again "
                "from the start of its input with another checkpoint directory"
            )
        if manifest.get("fingerprint") != self.fingerprint:
            raise CheckpointError(self._foreign(path, str(manifest.get("description", ""))))
        return Commit(int(manifest["batches"]), bool(manifest["ended"]), state)

    def _foreign(self, path: Path, theirs: str) -> str:
        return foreign(f"checkpoint {path}", theirs, self.description)

    def described(self) -> str | None:
        """The description of the pipeline that wrote the newest manifest (unchecked), or
        None when the directory holds none that can be read.

        Example:
            >>> import tempfile
            >>> store = CheckpointStore(tempfile.mkdtemp(), fingerprint="f", description="d")
            >>> store.described() is None
            True
            >>> store.commit(1, ended=False, state=b"s", clocks=[])
            >>> store.described()
            'd'
        """
        for _, path in self._manifests():
            try:
                description = json.loads(path.read_text()).get("description")
            except (OSError, ValueError, AttributeError):
                continue
            return description if isinstance(description, str) else None
        return None

    def latest(self) -> Commit | None:
        """The newest complete commit, or None when the directory holds none.

        Raises:
            CheckpointError: the directory holds manifests but none is complete (its state
                file is missing or does not match its checksum).
        """
        manifests = self._manifests()
        for _, path in manifests:
            commit = self._read(path)
            if commit is not None:
                return commit
        if manifests:
            raise CheckpointError(
                f"checkpoint {self.directory} is damaged: no manifest with its state file "
                f"intact (newest: {manifests[0][1].name})"
            )
        return None

    def commit(
        self, batches: int, *, ended: bool, state: bytes, clocks: list[tuple[str, int, int]]
    ) -> None:
        """Write commit ``batches``: the state, the clocks, then the manifest; then remove
        the files of older commits."""
        name = f"{batches:012d}"
        state_file, clocks_file = f"state-{name}.pickle", f"clocks-{name}.arrow"
        _write_file(self.directory / state_file, state)
        table = pl.DataFrame(
            clocks,
            schema={"partition": pl.String, "time": pl.Int64, "position": pl.Int64},
            orient="row",
        )
        _write_file(self.directory / clocks_file, table.write_ipc(None).getvalue())
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "batches": batches,
            "ended": ended,
            "fingerprint": self.fingerprint,
            "description": self.description,
            "files": {"state": state_file, "clocks": clocks_file},
            "state_sha256": hashlib.sha256(state).hexdigest(),
        }
        _write_file(self.directory / f"manifest-{name}.json", json.dumps(manifest).encode())
        keep = {f"manifest-{name}.json", state_file, clocks_file}
        for path in self.directory.iterdir():
            if path.name not in keep and path.name.split("-")[0] in ("manifest", "state", "clocks"):
                path.unlink(missing_ok=True)
