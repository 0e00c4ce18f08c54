"""The write side of the filesystem: directories, deletes, moves, permissions, and watches.

`write_file` (raw body), `upload` and `upload_zip` (multipart forms) carry no JSON model: their
fields are query parameters and form parts, named here so client and service agree on them.
Modes are octal strings ("644", "0755"), as the official SDK sends them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from bbrowse.wire.base import WireModel

CLOSED = ConfigDict(extra="forbid", strict=True)

#: An octal permission string: three or four digits 0-7.
OCTAL_MODE_PATTERN = r"^[0-7]{3,4}$"
AbsolutePath = Annotated[str, Field(pattern=r"^/.*", description="Absolute path on the instance.")]
OctalMode = Annotated[str, Field(pattern=OCTAL_MODE_PATTERN, description="Octal mode, e.g. 644 or 0755.")]

#: Multipart field names of `upload`: `files[<i>][file]` and `files[<i>][dest_path]`.
UPLOAD_FILE_FIELD = "files[{index}][file]"
UPLOAD_DEST_FIELD = "files[{index}][dest_path]"
#: Multipart field names of `upload_zip`.
ZIP_FILE_FIELD = "zip_file"
ZIP_DEST_FIELD = "dest_path"


class CreateDirectoryRequest(WireModel):
    model_config = CLOSED

    path: AbsolutePath
    mode: OctalMode | None = None


class DeletePathRequest(WireModel):
    model_config = CLOSED

    path: AbsolutePath


class MovePathRequest(WireModel):
    model_config = CLOSED

    src_path: AbsolutePath
    dest_path: AbsolutePath
    #: Replace an existing `dest_path` (a file, or an empty directory when moving a directory).
    #: Without it an existing destination is refused with 409, so nothing is lost by accident.
    overwrite: bool = False


class SetFilePermissionsRequest(WireModel):
    model_config = CLOSED

    path: AbsolutePath
    mode: OctalMode
    owner: str | None = Field(default=None, min_length=1, description="New owner: user name or UID.")
    group: str | None = Field(default=None, min_length=1, description="New group: group name or GID.")


class WatchStartRequest(WireModel):
    model_config = CLOSED

    path: AbsolutePath
    recursive: bool = False


class WatchStartResult(WireModel):
    watch_id: str


FileSystemEventType = Literal["CREATE", "WRITE", "DELETE", "RENAME"]


class FileSystemEvent(WireModel):
    """One change under a watched directory, as `fs/watch/{watch_id}/events` sends it.

    RENAME names the old path (the new name arrives as a CREATE), as fsnotify reports renames.
    """

    type: FileSystemEventType
    path: str
    name: str | None = None
    is_dir: bool | None = None
