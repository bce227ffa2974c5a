"""The project a checked file belongs to: its root, and the local modules its imports reach.

A module is read and parsed once per process (keyed by its path and content hash) and only when
a call into it has to be resolved; a module outside the project (torch, transformers) is never
looked for, so its calls stay unknown."""

from __future__ import annotations

import ast
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from accumlint.legacy_grammar import parse_python

_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_MAX_MODULE_BYTES = 2_000_000  # a generated monster is not a helper module worth reading
# An import statement (its parenthesised name list too): the words in it name the modules it reads.
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*(?:\([^)]*\)|[^\n]*)|import[ \t]+[^\n]*)", re.M)
_MAX_IMPORTER_SCAN = 20_000  # files: a monorepo past this is not scanned for importers


def project_root(path: Path) -> Path:
    """The nearest folder above `path` with a project marker; else the folder the check runs
    from, when it holds the file (an exported tree without `.git`, checked from its top: a script
    in `optimizer/` is called from `train.py` beside that folder); else the folder that holds the
    top package (the last folder going up that has an `__init__.py`)."""
    start = path.resolve().parent
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in _ROOT_MARKERS):
            return folder
    top = start
    while (top / "__init__.py").exists() and top.parent != top:
        top = top.parent
    here = _working_folder()
    if here is not None and here != top and here in top.parents:
        return here
    return top


def _working_folder() -> Optional[Path]:
    """The folder the check runs from, unless it is too wide to be one project (the file
    system's root or the home folder)."""
    try:
        here = Path.cwd().resolve()
    except OSError:
        return None
    if here.parent == here or here == Path.home().resolve():
        return None
    return here


@dataclass(frozen=True)
class LocalModule:
    path: Path
    text: str
    digest: str
    tree: ast.Module


class ProjectIndex:
    """Finds and parses the project's own modules on demand."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._search = [root, root / "src"]
        self._modules: dict[Path, tuple[tuple[int, int], Optional[LocalModule]]] = {}
        self._found: dict[tuple[Path, str, int, Optional[str]], Optional[Path]] = {}
        self._folders: dict[Path, Path] = {}  # importer -> its resolved folder
        self._resolved_root = root.resolve()
        self._resolved: dict[Path, Path] = {}
        self._files: dict[tuple[Path, bool], Optional[Path]] = {}  # a module's path -> its file, misses too
        self._imported_words: Optional[dict[str, list[Path]]] = None
        self._dotted_imports: dict[str, set[str]] = {}  # first name -> the dotted modules imported under it
        self._own_names: Optional[frozenset[str]] = None

    def resolved(self, path: Path) -> Path:
        """`path.resolve()`, asked of the file system once per path: every call into a module
        asks for it again, and each asks the system about every folder on the way."""
        found = self._resolved.get(path)
        if found is None:
            found = self._resolved[path] = path.resolve()
        return found

    # --- finding files ---------------------------------------------------------------------
    def _file_for(self, base: Path, parts: list[str]) -> Optional[Path]:
        folder = base.joinpath(*parts)
        key = (folder, bool(parts))
        if key not in self._files:  # each importer folder tries the same bases for `torch`, `os`, ...
            self._files[key] = next(
                (c for c in (folder.with_suffix(".py") if parts else None, folder / "__init__.py") if c is not None and c.is_file()),
                None,
            )
        return self._files[key]

    def module_file(self, importer: Path, dotted: str, level: int = 0) -> Optional[Path]:
        """The file of module `dotted` imported from `importer` (relative when `level` > 0);
        answers, misses included, are remembered per importer folder (a file system is slow to
        ask the same thing once per import of `torch`)."""
        folder = self._folders.get(importer)
        if folder is None:
            folder = self._folders[importer] = importer.resolve().parent
        # a module named like its importer may be the importer itself, which it never means
        own = importer.stem if not level and dotted.rpartition(".")[2] == importer.stem else None
        key = (folder, dotted, level, own)
        if key not in self._found:
            self._found[key] = self._look_up(importer, dotted, level)
        return self._found[key]

    def _look_up(self, importer: Path, dotted: str, level: int) -> Optional[Path]:
        parts = [p for p in dotted.split(".") if p]
        if level:
            base = importer.resolve().parent
            for _ in range(level - 1):
                base = base.parent
            return self._file_for(base, parts)
        # The script's own folder comes first (it is sys.path[0] when the script runs).
        itself = importer.resolve()
        for base in (itself.parent, *self._search):
            found = self._file_for(base, parts)
            if found is not None and self._inside(found) and found.resolve() != itself:
                return found  # `from model import X` in utils/model.py: the package model/, not itself
        # `from src.trainer import Trainer` in medium_models/src/run.py, run from medium_models:
        # the folder the script is started from may be any one above it inside the project.
        for base in itself.parent.parents:
            if not self._inside(base):
                break
            found = self._file_for(base, parts)
            if found is not None:
                return found
        if len(parts) > 1 and parts[0] in self.own_package_names():
            return self._file_for(self.root, parts[1:])
        return None

    def own_package_names(self) -> frozenset[str]:
        """The names under which the project imports itself while its root folder is the package
        (`from mae_st.engine import train` in a checkout whose root holds `engine.py`, with no
        `mae_st/` folder inside): the root's own folder name, and any first name that no local
        module carries but under which every imported module lies in the root (two at least, one
        of them a plain module, so that `torch.utils` beside a local `utils/` is no such name)."""
        if self._own_names is None:
            self._scan_once()  # the walk that finds importers gathers the imported modules too
            names = {self.root.name} if self.root.name.isidentifier() else set()
            for first, dotted in self._dotted_imports.items():
                if self._is_own_name(first, dotted):
                    names.add(first)
            self._own_names = frozenset(names)
        return self._own_names

    def _is_own_name(self, first: str, dotted: set[str]) -> bool:
        if len(dotted) < 2 or any(self._file_for(base, [first]) for base in self._search):
            return False
        plain = False
        for name in sorted(dotted):
            rest = name.split(".")[1:]
            path = self._file_for(self.root, rest)
            # a folder without `__init__.py` is a namespace package: it counts, but is no plain module
            if path is None and not self.root.joinpath(*rest).is_dir():
                return False  # `torch.nn` with no `nn` here: the first miss settles it
            plain = plain or path is not None and path.name != "__init__.py"
        return plain

    def _inside(self, path: Path) -> bool:
        try:
            self.resolved(path).relative_to(self._resolved_root)
        except ValueError:
            return False
        return True

    def split(self, importer: Path, origin: str, level: int = 0) -> Optional[tuple[Path, str]]:
        """`pkg.losses.compute_loss` -> (the file of pkg.losses, "compute_loss"): the longest
        prefix that is a local module, and the rest."""
        parts = origin.split(".")
        for cut in range(len(parts) - 1, -1 if level else 0, -1):
            found = self.module_file(importer, ".".join(parts[:cut]), level)
            if found is not None:
                return found, ".".join(parts[cut:])
        return None

    def importers(self, path: Path) -> list[Path]:
        """The project's files whose import statements name the module at `path` (its own name,
        or its package's for an `__init__.py`): the candidates for calling into it. Each file is
        read once per process, on the first question; a candidate may still turn out not to."""
        words = self._scan_once()
        name = path.parent.name if path.stem == "__init__" else path.stem
        return [p for p in words.get(name, []) if self.resolved(p) != self.resolved(path)]

    def _scan_once(self) -> dict[str, list[Path]]:
        if self._imported_words is None:
            self._imported_words = self._scan_imports()
        return self._imported_words

    def _scan_imports(self) -> dict[str, list[Path]]:
        from accumlint.discovery import skipped_dir  # the folders `accumlint check .` never walks

        words: dict[str, list[Path]] = {}
        scanned = 0
        for folder, subfolders, files in os.walk(self.root):
            subfolders[:] = sorted(d for d in subfolders if not (skipped_dir(d) or d.startswith(".")))
            for file in sorted(f for f in files if f.endswith(".py")):
                scanned += 1
                if scanned > _MAX_IMPORTER_SCAN:
                    return words
                path = Path(folder) / file
                try:
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                statements = _IMPORT.findall(text)
                named = {word for statement in statements for word in re.findall(r"\w+", statement)}
                for word in named:
                    words.setdefault(word, []).append(path)
                for statement in statements:
                    for dotted in _imported_modules(statement):
                        self._dotted_imports.setdefault(dotted.split(".")[0], set()).add(dotted)
        return words

    # --- reading modules -------------------------------------------------------------------
    def read_before(self, path: Path) -> Optional[LocalModule]:
        """The module as last read (the text an analysis used), without asking the file system
        whether it changed since; read now if it never was."""
        known = self._modules.get(self.resolved(path))
        return known[1] if known is not None else self.module(path)

    def read_already(self, path: Path) -> Optional[LocalModule]:
        """The module as already read for another file's calls; never reads."""
        known = self._modules.get(self.resolved(path))
        return known[1] if known is not None else None

    def parsed(self, path: Path, text: str) -> Optional[LocalModule]:
        """The module as already read, when it holds exactly `text` (a checked file that an
        earlier file imports need not be parsed twice); never reads."""
        module = self.read_already(path)
        return module if module is not None and module.text == text else None

    def module(self, path: Path) -> Optional[LocalModule]:
        """The parsed module, read again only when its size or modification time changed."""
        key = self.resolved(path)
        try:
            info = key.stat()
        except OSError:
            return None
        stamp = (info.st_mtime_ns, info.st_size)
        known = self._modules.get(key)
        if known is None or known[0] != stamp:
            known = self._modules[key] = (stamp, _read(key))
        return known[1]


def _imported_modules(statement: str) -> list[str]:
    """The absolute dotted modules (two names at least) an import statement reads."""
    words = statement.split()
    if words[0] == "from":
        names = [words[1]]
    else:
        names = [part.split()[0] for part in " ".join(words[1:]).split(",") if part.split()]
    return [name for name in names if "." in name and not name.startswith(".")]


def _read(path: Path) -> Optional[LocalModule]:
    try:
        data = path.read_bytes()
        if len(data) > _MAX_MODULE_BYTES:
            return None
        tree = parse_python(data, str(path))
        text = data.decode("utf-8-sig")
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
        return None  # its own check reports it; here it is just unknown
    return LocalModule(path, text, hashlib.sha256(data).hexdigest(), tree)


def file_digest(path: Path) -> str:
    """The content hash a module is known by ("" when it cannot be read)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


_INDEXES: dict[Path, ProjectIndex] = {}


_ROOTS: dict[Path, Path] = {}


def index_for(path: Path) -> ProjectIndex:
    """One index per project root and process: every checked file of a project shares it."""
    folder = path.resolve().parent
    if folder not in _ROOTS:
        _ROOTS[folder] = project_root(path)
    root = _ROOTS[folder]
    index = _INDEXES.get(root)
    if index is None:
        index = _INDEXES[root] = ProjectIndex(root)
    return index
