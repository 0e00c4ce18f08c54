"""A lazy tree of the session's filesystem: a directory is listed (`list_files`) only when it is expanded.

Like Textual's `DirectoryTree`, but the filesystem is remote: each listing runs in a worker, the node
shows "loading…" meanwhile, and a listing that fails (permission, gone) becomes a red leaf under the
node with the service's code and message; `r` lists the directory again. Names from the instance are
always `Text`, never markup.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from bbrowse.client import ClientError, is_symlink
from bbrowse.tui.app_services import services
from bbrowse.wire import FileInfo

#: Entries shown per directory; a huge directory gets a "… N more" leaf instead of freezing the tree.
MAX_ENTRIES = 5000


@dataclass
class RemoteEntry:
    """What a tree node stands for: a path on the instance and what `list_files`/`file_info` said about it."""

    path: str
    info: FileInfo | None = None
    is_dir: bool = True
    loaded: bool = False
    loading: bool = False
    #: The text of a failed listing, shown under the node.
    error: str | None = None
    #: A placeholder row (an error or "… more"), not a file.
    placeholder: bool = False

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/")) or "/"


def entry_label(entry: RemoteEntry) -> Text:
    """`name/` for directories (bold), `name@` for symbolic links (italic), `name` for files, hidden ones dim."""
    if entry.placeholder:
        return Text(f"⚠ {entry.error}" if entry.error else "", style="red" if entry.error else "dim italic")
    if entry.info is not None and is_symlink(entry.info):  # a service that lstats (Kernel's VM) says so
        label = Text(entry.name + "@", style="italic")
        if entry.name.startswith("."):
            label.stylize("dim")
        return label
    label = Text(entry.name + ("/" if entry.is_dir and entry.name != "/" else ""))
    if entry.is_dir:
        label.stylize("bold")
    if entry.name.startswith("."):
        label.stylize("dim")
    return label


class RemoteFileTree(Tree[RemoteEntry]):
    """The session's files from `root_path` down; posts `FileOpened` when enter is pressed on a file."""

    ICON_NODE = "▸ "
    ICON_NODE_EXPANDED = "▾ "

    BINDINGS = [
        Binding("r", "reload", "Reload dir", id="files.reload"),
    ]

    DEFAULT_CSS = """
    RemoteFileTree { height: 1fr; }
    """

    class FileOpened(Message):
        """Enter on a file."""

        def __init__(self, tree: RemoteFileTree, entry: RemoteEntry) -> None:
            super().__init__()
            self.tree = tree
            self.entry = entry

        @property
        def control(self) -> RemoteFileTree:
            return self.tree

    class DirectoryLoaded(Message):
        """A directory's listing arrived (or failed) and its children are in the tree."""

        def __init__(self, tree: RemoteFileTree, node: TreeNode[RemoteEntry]) -> None:
            super().__init__()
            self.tree = tree
            self.node = node

        @property
        def control(self) -> RemoteFileTree:
            return self.tree

    class RootChanged(Message):
        """The tree shows another directory (`set_root`)."""

        def __init__(self, tree: RemoteFileTree, path: str) -> None:
            super().__init__()
            self.tree = tree
            self.path = path

        @property
        def control(self) -> RemoteFileTree:
            return self.tree

    def __init__(self, session_id: str, root_path: str | None = "/", *, id: str | None = None) -> None:
        """`root_path` None: show nothing until `set_root` (the owner is still finding the start directory)."""
        super().__init__(Text(root_path or "…"), RemoteEntry(root_path) if root_path else None, id=id)
        self.session_id = session_id
        self.guide_depth = 3

    @property
    def root_path(self) -> str:
        return self.root.data.path if self.root.data else "/"

    def on_mount(self) -> None:
        if self.root.data is not None:
            self.set_root(self.root.data.path)

    def set_root(self, path: str, info: FileInfo | None = None) -> None:
        """Show the tree from directory `path`, listing it now."""
        self.reset(Text(path, style="bold"), RemoteEntry(path, info))
        self.root.expand()
        self._load(self.root)
        self.post_message(self.RootChanged(self, path))

    def process_label(self, label) -> Text:
        # Names come from the instance: never parse them as markup.
        return super().process_label(label if isinstance(label, Text) else Text(str(label)))

    def render_label(self, node: TreeNode[RemoteEntry], base_style: Style, style: Style) -> Text:
        text = super().render_label(node, base_style, style)
        if node is self.root:  # a long root path keeps its end, the part that says where this is
            room = self.scrollable_content_region.width - 3  # the root's expand icon, and a cell to spare
            if room > 1 and text.cell_len > room:
                text = Text("…", style=text.style) + text[text.cell_len - room + 1:]
        entry = node.data
        if entry is not None and entry.loading:
            text.append(" loading…", style="dim italic")
        return text

    def node_for_path(self, path: str) -> TreeNode[RemoteEntry] | None:
        """The node showing `path`, if it is in the tree now."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node.data is not None and not node.data.placeholder and node.data.path == path:
                return node
            stack.extend(node.children)
        return None

    # loading ------------------------------------------------------------------

    def _on_tree_node_expanded(self, event: Tree.NodeExpanded[RemoteEntry]) -> None:
        entry = event.node.data
        if entry is not None and entry.is_dir and not entry.loaded and not entry.loading:
            self._load(event.node)

    def action_reload(self) -> None:
        node = self.cursor_node or self.root
        if node.data is not None and (not node.data.is_dir or node.data.placeholder) and node.parent is not None:
            node = node.parent
        entry = node.data
        if entry is None or entry.loading:
            return
        entry.loaded = False
        node.expand()
        self._load(node)

    def _load(self, node: TreeNode[RemoteEntry]) -> None:
        entry = node.data
        assert entry is not None
        entry.loading = True
        self._refresh_node(node)
        self._list(node)

    @work(group="file-tree-list")
    async def _list(self, node: TreeNode[RemoteEntry]) -> None:
        entry = node.data
        assert entry is not None
        infos: list[FileInfo] | ClientError
        try:
            infos = await services(self).connected_client().fs.list_files(self.session_id, entry.path)
        except ClientError as error:
            infos = error
        self.post_message(self.Listed(node, entry, infos, again=False))

    class Listed(Message):
        """A listing of `entry` (the data of `node`) arrived; `again`: a refresh of a listed directory."""

        def __init__(self, node: TreeNode[RemoteEntry], entry: RemoteEntry, infos: list[FileInfo] | ClientError,
                     *, again: bool) -> None:
            super().__init__()
            self.node, self.entry, self.infos, self.again = node, entry, infos, again

    @on(Listed)
    def _listed(self, message: Listed) -> None:
        message.stop()
        node, entry = message.node, message.entry
        if message.again:
            self._relisted(node, entry, message.infos)
            return
        entry.loading = False
        infos = None if isinstance(message.infos, ClientError) else message.infos
        if isinstance(message.infos, ClientError):
            entry.error = str(message.infos)
        if not self._is_live(node) or node.data is not entry:
            return  # the tree was re-rooted meanwhile
        node.remove_children()
        if infos is None:
            node.add_leaf(entry_label(RemoteEntry(entry.path, error=entry.error, placeholder=True)),
                          RemoteEntry(entry.path, error=entry.error, placeholder=True))
        else:
            entry.error = None
            entry.loaded = True
            for info in infos[:MAX_ENTRIES]:
                child = RemoteEntry(info.path, info, is_dir=info.is_dir)
                if info.is_dir:
                    node.add(entry_label(child), child)
                else:
                    node.add_leaf(entry_label(child), child)
            if len(infos) > MAX_ENTRIES:
                more = RemoteEntry(entry.path, placeholder=True)
                node.add_leaf(Text(f"… {len(infos) - MAX_ENTRIES} more entries not shown", style="dim italic"), more)
            if not infos:
                node.add_leaf(Text("(empty)", style="dim italic"), RemoteEntry(entry.path, placeholder=True))
        self._refresh_node(node)
        self.post_message(self.DirectoryLoaded(self, node))

    # refreshing in place ---------------------------------------------------------

    def refresh_directory(self, path: str) -> None:
        """List the directory shown at `path` again, if it is in the tree and was listed (else nothing)."""
        node = self.node_for_path(path)
        if node is None or node.data is None or not node.data.is_dir or not node.data.loaded:
            return
        self._relist(node)

    @work(group="file-tree-refresh")
    async def _relist(self, node: TreeNode[RemoteEntry]) -> None:
        entry = node.data
        assert entry is not None
        infos: list[FileInfo] | ClientError
        try:
            infos = await services(self).connected_client().fs.list_files(self.session_id, entry.path)
        except ClientError as error:
            infos = error
        self.post_message(self.Listed(node, entry, infos, again=True))

    def _relisted(self, node: TreeNode[RemoteEntry], entry: RemoteEntry, infos: list[FileInfo] | ClientError) -> None:
        if not self._is_live(node) or node.data is not entry:
            return
        if isinstance(infos, ClientError):  # the directory went away or became unreadable: shown as a listing would
            entry.loaded = False
            self._load(node)
            return
        self._merge(node, infos[:MAX_ENTRIES])
        self.post_message(self.DirectoryLoaded(self, node))

    def _merge(self, node: TreeNode[RemoteEntry], infos: list[FileInfo]) -> None:
        """Make `node`'s children match `infos`, keeping the nodes of entries still there."""
        highlighted = self.cursor_node
        highlighted_path = highlighted.data.path if highlighted is not None and highlighted.data else None
        kept: dict[str, TreeNode[RemoteEntry]] = {}
        for child in list(node.children):
            data = child.data
            info = next((i for i in infos if data is not None and i.path == data.path), None)
            if data is None or data.placeholder or info is None or info.is_dir != data.is_dir:
                child.remove()
                continue
            data.info = info
            kept[data.path] = child
        following: TreeNode[RemoteEntry] | None = None
        for info in reversed(infos):  # from the end, so each new entry goes before the one after it
            if info.path in kept:
                following = kept[info.path]
                continue
            child_entry = RemoteEntry(info.path, info, is_dir=info.is_dir)
            label = entry_label(child_entry)
            if following is None:
                following = (node.add(label, child_entry) if info.is_dir
                             else node.add_leaf(label, child_entry))
            elif info.is_dir:
                following = node.add(label, child_entry, before=following)
            else:
                following = node.add_leaf(label, child_entry, before=following)
        if not infos:
            directory = node.data
            assert directory is not None  # `_relist` merges only a node that carries its entry
            node.add_leaf(Text("(empty)", style="dim italic"), RemoteEntry(directory.path, placeholder=True))
        if highlighted_path is not None:
            still = self.node_for_path(highlighted_path)
            if still is not None:
                self.highlight(still)
        self._refresh_node(node)

    def highlight(self, node: TreeNode[RemoteEntry]) -> None:
        """Put the cursor on `node`, also right after nodes were added or removed above it."""
        self._tree_lines  # noqa: B018 - Textual numbers the lines lazily; move_cursor needs them current
        self.move_cursor(node)

    def _is_live(self, node: TreeNode[RemoteEntry]) -> bool:
        """Still in the tree (`reset` replaces the root, and a removed node keeps its stale parent)."""
        while node.parent is not None:
            if node not in node.parent.children:
                return False
            node = node.parent
        return node is self.root

    def _on_tree_node_selected(self, event: Tree.NodeSelected[RemoteEntry]) -> None:
        entry = event.node.data
        if entry is not None and not entry.is_dir and not entry.placeholder:
            self.post_message(self.FileOpened(self, entry))
