"""File modes as services write them in `FileInfo.mode`, read into kind and permission bits.

`bbrowse serve` writes the `ls -l` form (`-rw-r--r--`, `drwxrwxrwt`, `lrwxrwxrwx`); Kernel's VM writes
Go's `FileMode.String()`: type and special letters before the nine permission characters (`dtrwxrwxrwx`
for /tmp, `urwxr-xr-x` setuid, `Lrwxrwxrwx` a symlink, `Dcrw-rw-rw-` a character device).

    mode = parse_mode("dtrwxrwxrwx")    # FileMode(kind="dir", bits=0o1777)
    mode.ls()                           # "drwxrwxrwt"
    mode.octal                          # "1777"
"""

from __future__ import annotations

from dataclasses import dataclass

from bbrowse.wire import FileInfo

_RWX = ((0o400, "r"), (0o200, "w"), (0o100, "x"), (0o40, "r"), (0o20, "w"), (0o10, "x"),
        (0o4, "r"), (0o2, "w"), (0o1, "x"))
#: `ls -l`'s type character of each kind.
_LS_TYPE = {"file": "-", "dir": "d", "link": "l", "pipe": "p", "socket": "s", "char": "c", "block": "b",
            "other": "?"}
_POSIX_TYPE = {value: key for key, value in _LS_TYPE.items()}
#: Go's letters that say nothing about the kind (append-only, exclusive, temporary, irregular).
_GO_FLAGS = frozenset("alT?")


@dataclass(frozen=True)
class FileMode:
    #: "file", "dir", "link", "pipe", "socket", "char", "block" or "other".
    kind: str
    #: Permission bits with setuid, setgid and sticky (at most 0o7777).
    bits: int

    @property
    def is_link(self) -> bool:
        return self.kind == "link"

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"

    @property
    def octal(self) -> str:
        """As chmod takes it: "644", "1777"."""
        return format(self.bits, "03o")

    def ls(self) -> str:
        """As `ls -l` shows it: "drwxrwxrwt", "-rwsr-xr-x", "lrwxrwxrwx"."""
        chars = [letter if self.bits & bit else "-" for bit, letter in _RWX]
        for index, special, letter in ((2, 0o4000, "s"), (5, 0o2000, "s"), (8, 0o1000, "t")):
            if self.bits & special:
                chars[index] = letter if chars[index] == "x" else letter.upper()
        return _LS_TYPE[self.kind] + "".join(chars)


def parse_mode(text: str) -> FileMode | None:
    """Either form, or None for text that is neither."""
    text = text.strip()
    if len(text) < 10:
        return None
    prefix, perms = text[:-9], text[-9:]
    bits = 0
    for char, (bit, letter) in zip(perms, _RWX, strict=True):
        index = _RWX.index((bit, letter))
        special = (0o4000, 0o2000, 0o1000)[index // 3] if index % 3 == 2 else 0
        if char == letter:
            bits |= bit
        elif char in "st" and letter == "x":
            bits |= bit | special
        elif char in "ST" and letter == "x":
            bits |= special
        elif char != "-":
            return None
    if len(prefix) == 1 and prefix in _POSIX_TYPE and prefix != "?":
        return FileMode(_POSIX_TYPE[prefix], bits)
    kind = "file"
    device = False
    for char in prefix:
        if char == "d":
            kind = "dir"
        elif char == "L":
            kind = "link"
        elif char == "D":
            device = True
        elif char == "c":
            kind = "char"
        elif char == "p":
            kind = "pipe"
        elif char == "S":
            kind = "socket"
        elif char == "u":
            bits |= 0o4000
        elif char == "g":
            bits |= 0o2000
        elif char == "t":
            bits |= 0o1000
        elif char not in _GO_FLAGS and char != "-":
            return None
    if device and kind == "file":
        kind = "block"
    return FileMode(kind, bits)


def is_symlink(info: FileInfo) -> bool:
    """The entry is a symbolic link (a service that lstats, as Kernel's VM does, says so in its mode)."""
    mode = parse_mode(info.mode)
    return mode is not None and mode.is_link
