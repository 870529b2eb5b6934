"""Records of the servers localagent manages, one JSON file per port, so that `server status`,
`server stop` and a second localagent find the server another process started."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from server.pid_state import pid_alive
from server.ports import local_base_url
from server.secret_argv import redact_argv

if TYPE_CHECKING:
    from server.supervisor import SupervisorStatus


class ServerRecord(BaseModel):
    port: int
    host: str
    profile: str
    model: str  # the main model's path
    owner_pid: int  # the daemon or the localagent process that supervises the server
    server_pid: int | None = None
    state: str = "starting"
    restarts: int = 0
    started_at: float | None = None
    process_started_at: float | None = None
    n_ctx: int | None = None
    log_path: str
    message: str = ""
    last_exit: str = ""  # why the process last died, kept after the restart that followed
    argv: list[str] = []
    api_key: str | None = None
    device: str = ""  # where it serves: "GPU CUDA0 NVIDIA ... , all layers", "CPU"

    @property
    def base_url(self) -> str:
        return local_base_url(self.host, self.port)

    def with_status(self, status: SupervisorStatus) -> ServerRecord:
        """This record with the supervisor's latest news."""
        return self.model_copy(
            update={
                "state": str(status.state),
                "server_pid": status.pid,
                "restarts": status.restarts,
                "started_at": status.started_at,
                "process_started_at": status.process_started_at,
                "message": status.message,
                "last_exit": status.last_exit,
            }
        )

    def public_dict(self) -> dict[str, object]:
        """The record without secrets: the api key is redacted from argv too."""
        data = self.model_dump(exclude={"api_key"})
        data["argv"] = redact_argv(self.argv)
        return data

    @property
    def owner_alive(self) -> bool:
        return pid_alive(self.owner_pid)


class Registry:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path_for(self, port: int) -> Path:
        return self.directory / f"{port}.json"

    def write(self, record: ServerRecord) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        # Write then rename, so a reader never sees half a record.
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".record-")
        with os.fdopen(fd, "w") as handle:
            handle.write(record.model_dump_json(indent=2))
        os.replace(tmp, self.path_for(record.port))

    def read(self, port: int) -> ServerRecord | None:
        path = self.path_for(port)
        try:
            return ServerRecord.model_validate(json.loads(path.read_text()))
        except (OSError, ValueError, ValidationError):
            return None

    def remove(self, port: int, owner_pid: int | None = None) -> None:
        """Remove the record; with ``owner_pid`` only if that process still owns it."""
        record = self.read(port)
        if owner_pid is not None and record is not None and record.owner_pid != owner_pid:
            return
        self.path_for(port).unlink(missing_ok=True)

    def live(self) -> list[ServerRecord]:
        """Records whose supervising process is alive, and failures kept so the user can read why;
        other stale records are cleaned up."""
        records = []
        for path in sorted(self.directory.glob("*.json")):
            record = self.read(int(path.stem)) if path.stem.isdigit() else None
            if record is None:
                continue
            if record.owner_alive or record.state == "failed":
                records.append(record)
            else:
                path.unlink(missing_ok=True)
        return records
