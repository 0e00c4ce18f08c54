"""What a file is, from its first bytes and its name: text (and which language), binary, or an image.

The viewer decides from the first block it receives, before the rest of the file arrives, so a
500 MB file is classified from its first few KiB. Pure functions: no I/O, no Textual, no Pygments
import on the hot path (the language comes from a small table; Pygments' own, slower lookup is the
fallback, used off the UI thread).
"""

from __future__ import annotations

import codecs
from enum import StrEnum
from pathlib import PurePosixPath

#: How many leading bytes decide the kind (more are ignored; fewer only when the file is shorter).
SNIFF_BYTES = 8192


class FileKind(StrEnum):
    TEXT = "text"
    BINARY = "binary"
    IMAGE = "image"


#: Magic bytes of the image formats the viewer draws (the formats Pillow decodes and browsers save).
_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
)


def image_format(head: bytes) -> str | None:
    """`png`, `jpeg`, `gif` or `webp` when `head` starts like one, else None."""
    for magic, name in _IMAGE_MAGIC:
        if head.startswith(magic):
            return name
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


def is_binary(head: bytes, *, complete: bool = False) -> bool:
    """True when `head` holds a NUL byte or is not valid UTF-8.

    `complete` says `head` is the whole file; otherwise a multi-byte character cut off at the end of
    the block is not held against it.
    """
    if b"\x00" in head:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=complete)
    except UnicodeDecodeError:
        return True
    return False


def detect_kind(head: bytes, *, complete: bool = False) -> FileKind:
    """Image by magic bytes first (a PNG is binary too), then binary vs text."""
    head = head[:SNIFF_BYTES]
    if image_format(head) is not None:
        return FileKind.IMAGE
    if is_binary(head, complete=complete and len(head) < SNIFF_BYTES):
        return FileKind.BINARY
    return FileKind.TEXT


#: File extension (lower case, no dot) to a Pygments lexer alias, for the common cases.
_BY_EXTENSION: dict[str, str] = {
    "py": "python", "pyi": "python", "pyw": "python",
    "js": "javascript", "mjs": "javascript", "cjs": "javascript", "jsx": "jsx",
    "ts": "typescript", "tsx": "tsx",
    "json": "json", "jsonl": "json", "ndjson": "json", "map": "json",
    "html": "html", "htm": "html", "xhtml": "html", "xml": "xml", "svg": "xml", "plist": "xml",
    "css": "css", "scss": "scss", "sass": "sass", "less": "less", "tcss": "scss",
    "md": "markdown", "markdown": "markdown", "rst": "rst",
    "sh": "bash", "bash": "bash", "zsh": "zsh", "fish": "fish", "ksh": "bash",
    "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "hpp": "cpp", "hh": "cpp",
    "rs": "rust", "go": "go", "java": "java", "kt": "kotlin", "kts": "kotlin", "scala": "scala",
    "rb": "ruby", "php": "php", "pl": "perl", "lua": "lua", "swift": "swift", "cs": "csharp",
    "sql": "sql", "toml": "toml", "yaml": "yaml", "yml": "yaml", "ini": "ini", "cfg": "ini", "conf": "ini",
    "env": "bash", "dockerfile": "docker", "mk": "make", "diff": "diff", "patch": "diff",
    "tf": "terraform", "proto": "protobuf", "graphql": "graphql", "vue": "vue", "svelte": "html",
    "log": "text", "txt": "text", "csv": "text", "tsv": "text",
}

#: Whole file names that say their language without an extension.
_BY_NAME: dict[str, str] = {
    "makefile": "make", "gnumakefile": "make", "dockerfile": "docker", "containerfile": "docker",
    "cmakelists.txt": "cmake", ".bashrc": "bash", ".profile": "bash", ".bash_profile": "bash", ".zshrc": "zsh",
    ".gitconfig": "ini", ".editorconfig": "ini", "pipfile": "toml", "cargo.lock": "toml", "go.mod": "text",
}

#: Interpreter on a `#!` line to a lexer alias.
_BY_INTERPRETER: dict[str, str] = {
    "python": "python", "python3": "python", "sh": "bash", "bash": "bash", "zsh": "zsh", "dash": "bash",
    "node": "javascript", "ruby": "ruby", "perl": "perl", "lua": "lua", "php": "php", "fish": "fish",
}


def language_for(name: str, first_line: str = "") -> str | None:
    """The Pygments lexer alias for a file called `name` (a path works too), or None when unknown.

    Looks at the whole name (`Makefile`), then the extension, then a `#!` line. None means "plain
    text unless Pygments knows better" — see `pygments_language`.
    """
    base = PurePosixPath(name).name.lower()
    if base in _BY_NAME:
        return _BY_NAME[base]
    suffix = PurePosixPath(base).suffix.lstrip(".")
    if suffix in _BY_EXTENSION:
        return _BY_EXTENSION[suffix]
    if first_line.startswith("#!"):
        words = first_line[2:].strip().split()
        if words:
            program = PurePosixPath(words[0]).name
            if program == "env" and len(words) > 1:
                program = words[1]
            program = program.rstrip("0123456789.") or program
            return _BY_INTERPRETER.get(program) or _BY_INTERPRETER.get(program + "3")
    return None


def pygments_language(name: str) -> str | None:
    """Pygments' own lookup by file name (slow the first time: it imports its lexer table)."""
    from pygments.lexers import find_lexer_class_for_filename

    try:
        lexer = find_lexer_class_for_filename(PurePosixPath(name).name)
    except Exception:
        return None
    if lexer is None:
        return None
    return lexer.aliases[0] if lexer.aliases else None
