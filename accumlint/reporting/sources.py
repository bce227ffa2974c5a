"""The text behind findings, for reporters that show it (`full`) or point into the file as
stored (GitHub annotations and SARIF must name a line of the `.ipynb` JSON, not of the cell)."""

from __future__ import annotations

from typing import Mapping, Optional

from accumlint.model import Location


class Sources:
    """Reads each file once, lazily; `given` holds text that is not on disk (stdin)."""

    def __init__(self, given: Optional[Mapping[str, bytes]] = None) -> None:
        self._raw: dict[str, Optional[bytes]] = dict(given or {})
        self._lines: dict[tuple[str, Optional[int]], list[str]] = {}
        self._indexes: dict[str, object] = {}

    def raw(self, filename: str) -> Optional[bytes]:
        if filename not in self._raw:
            try:
                with open(filename, "rb") as handle:
                    self._raw[filename] = handle.read()
            except OSError:
                self._raw[filename] = None
        return self._raw[filename]

    def lines(self, filename: str, cell: Optional[int]) -> list[str]:
        """The lines of the file, or of one notebook cell; [] when they cannot be read."""
        key = (filename, cell)
        if key not in self._lines:
            self._lines[key] = self._read_lines(filename, cell)
        return self._lines[key]

    def _read_lines(self, filename: str, cell: Optional[int]) -> list[str]:
        from accumlint.checking import _decode

        raw = self.raw(filename)
        if raw is None:
            return []
        if cell is None:
            return _decode(raw).splitlines()
        from accumlint.notebook import code_cells

        for number, source in code_cells(raw):
            if number == cell:
                return source.splitlines()
        return []

    def in_file(self, filename: str, cell: Optional[int], location: Location) -> Optional[Location]:
        """Where a position lies in the file as stored: itself for a source file, the place in
        the JSON text for a notebook cell (None when the notebook cannot be read)."""
        if cell is None:
            return location
        from accumlint.notebook import NotebookIndex

        index = self._indexes.get(filename)
        if index is None:
            raw = self.raw(filename)
            if raw is None:
                return None
            index = self._indexes[filename] = NotebookIndex(raw)
        assert isinstance(index, NotebookIndex)
        return index.locate(cell, location)
