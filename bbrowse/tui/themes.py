"""Themes as TOML files, turned into `textual.theme.Theme` and registered with the app.

bbrowse ships its themes in `bbrowse/themes/*.toml` (the repository's top-level `themes/` points
there); users add theirs in `<config dir>/themes/*.toml`, and a user theme with a shipped theme's
name replaces it. A file that is not TOML, misses `primary` or holds a colour Textual cannot parse
is skipped and reported as one line, so one bad file never keeps the app from starting.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from textual.color import Color, ColorParseError
from textual.theme import Theme

from bbrowse.config import DEFAULT_THEME

COLOUR_FIELDS = ("primary", "secondary", "accent", "foreground", "background", "surface", "panel", "boost",
                 "success", "warning", "error")


class ThemeFile(BaseModel):
    """One theme file's keys; unknown keys are mistakes and reported as such."""

    model_config = ConfigDict(extra="forbid")

    name: str
    primary: str
    secondary: str | None = None
    accent: str | None = None
    foreground: str | None = None
    background: str | None = None
    surface: str | None = None
    panel: str | None = None
    boost: str | None = None
    success: str | None = None
    warning: str | None = None
    error: str | None = None
    dark: bool = True
    luminosity_spread: float = 0.15
    text_alpha: float = 0.95
    #: Extra Textual CSS variables, e.g. "footer-key-foreground".
    variables: dict[str, str] = {}
    description: str | None = None
    author: str | None = None

    @field_validator(*COLOUR_FIELDS)
    @classmethod
    def _colour(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                Color.parse(value)
            except ColorParseError:
                raise ValueError(f"{value!r} is not a colour (use #rrggbb, rgb(...) or a colour name)") from None
        return value

    def to_theme(self) -> Theme:
        return Theme(**self.model_dump(exclude={"description", "author"}))


class ThemeFileError(ValueError):
    """A theme file that cannot be used; the message names the file and the problem."""


def load_theme_file(path: Path) -> Theme:
    """Parse one theme file; the file's stem is the name when it gives none."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ThemeFileError(f"{path}: cannot read: {error.strerror or error}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ThemeFileError(f"{path}: not valid TOML: {error}") from None
    data.setdefault("name", path.stem)
    try:
        return ThemeFile.model_validate(data).to_theme()
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in item['loc'])}: {item['msg'].removeprefix('Value error, ')}"
            for item in error.errors(include_url=False)
        )
        raise ThemeFileError(f"{path}: {problems}") from None


def shipped_themes_dir() -> Path:
    """The themes that come with bbrowse (a real directory, also inside an installed wheel)."""
    return Path(str(resources.files("bbrowse") / "themes"))


@dataclass
class LoadedThemes:
    """Themes by name, in the order found, and one line per file that was skipped."""

    themes: dict[str, Theme] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def load_themes(directories: Iterable[Path | None]) -> LoadedThemes:
    """Every `*.toml` theme in `directories`, in order (later ones replace earlier ones of the same name)."""
    loaded = LoadedThemes()
    for directory in directories:
        if directory is None or not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.toml")):
            try:
                theme = load_theme_file(path)
            except ThemeFileError as error:
                loaded.problems.append(str(error))
                continue
            loaded.themes[theme.name] = theme
    return loaded


def choose_theme(wanted: str, available: Iterable[str]) -> tuple[str, str | None]:
    """`wanted` when it is registered, else the default theme and a sentence saying why."""
    names = set(available)
    if wanted in names:
        return wanted, None
    fallback = DEFAULT_THEME if DEFAULT_THEME in names else "textual-dark"
    return fallback, f"Theme {wanted!r} is not available (missing or broken file); using {fallback}."
