"""`accumlint server`: a real LSP session over stdio with the installed command in a subprocess
(pygls's client speaks JSON-RPC to it): diagnostics on open and change, fixes as code actions."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

# pygls is in the test extra: a missing one fails these tests, it does not skip them.
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from cli_samples import BUGGY, CLEAN

ACCUMLINT = str(Path(sys.executable).with_name("accumlint"))


class Session:
    """A started server and what it has published, per document."""

    def __init__(self) -> None:
        self.client = LanguageClient("accumlint-tests", "1")
        self.published: dict[str, asyncio.Queue[types.PublishDiagnosticsParams]] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.setdefault(params.uri, asyncio.Queue()).put_nowait(params)

    async def start(self, root: Path) -> None:
        await self.client.start_io(ACCUMLINT, "server", cwd=str(root))
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=root.as_uri(),
        ))
        self.client.initialized(types.InitializedParams())

    async def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        queue = self.published.setdefault(uri, asyncio.Queue())
        return list((await asyncio.wait_for(queue.get(), timeout=60)).diagnostics)

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def _open(session: Session, path: Path, text: str) -> str:
    uri = path.as_uri()
    session.client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    return uri


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits (ASCII text here, so UTF-16 units are characters)."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: types.Position) -> int:
        return offsets[min(position.line, len(lines))] + position.character

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


def test_diagnostics_on_open_and_change_and_fixes_as_code_actions(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.accumlint]\nignore = ["ACC005"]\n')

    async def scenario() -> None:
        session = Session()
        await session.start(tmp_path)
        try:
            uri = _open(session, tmp_path / "train.py", BUGGY)
            found = await session.diagnostics(uri)
            # The configuration applies (ACC005 ignored), as with `accumlint check`.
            assert [(d.code, d.range.start.line, d.range.start.character, d.source) for d in found] == [
                ("ACC001", 2, 4, "accumlint")]
            assert found[0].code_description.href.endswith("/rules/ACC001.md")

            actions = await session.client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), range=found[0].range,
                context=types.CodeActionContext(diagnostics=found)))
            quick = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
            assert len(quick) == 1 and quick[0].title.startswith("ACC001: ") and quick[0].is_preferred
            fixed = _apply(BUGGY, quick[0].edit.changes[uri])
            assert "(loss / accum_steps).backward()" in fixed
            fix_all = [a for a in actions if a.kind == "source.fixAll.accumlint"]
            assert len(fix_all) == 1 and _apply(BUGGY, fix_all[0].edit.changes[uri]) == fixed

            session.client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)]))
            assert await session.diagnostics(uri) == []

            session.client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text="def (:\n")]))
            (error,) = await session.diagnostics(uri)
            assert error.severity == types.DiagnosticSeverity.Error and error.message.startswith("syntax error")
            assert (error.range.start.line, error.range.start.character) == (0, 4)
        finally:
            await session.stop()
        # The editor's text is never written to disk by a check.
        assert not (tmp_path / "train.py").exists()

    asyncio.run(scenario())


def test_unsafe_fixes_are_labelled_and_not_preferred(tmp_path):
    (tmp_path / ".git").mkdir()
    text = "for b in data:\n    loss = f(b)\n    loss.backward(retain_graph=True)\n    opt.step()\n"

    async def scenario() -> list[types.CodeAction]:
        session = Session()
        await session.start(tmp_path)
        try:
            uri = _open(session, tmp_path / "loop.py", text)
            found = [d for d in await session.diagnostics(uri) if d.code == "ACC006"]
            assert found, "ACC006 expected on a retain_graph=True backward in a loop"
            return await session.client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), range=found[0].range,
                context=types.CodeActionContext(diagnostics=found, only=[types.CodeActionKind.QuickFix])))
        finally:
            await session.stop()

    actions = asyncio.run(scenario())
    unsafe = [a for a in actions if a.title.startswith("ACC006")]
    assert unsafe and "unsafe" in unsafe[0].title and not unsafe[0].is_preferred


def test_a_clean_file_publishes_no_diagnostics(tmp_path):
    (tmp_path / ".git").mkdir()

    async def scenario() -> list[types.Diagnostic]:
        session = Session()
        await session.start(tmp_path)
        try:
            return await session.diagnostics(_open(session, tmp_path / "clean.py", CLEAN))
        finally:
            await session.stop()

    assert asyncio.run(scenario()) == []


def test_positions_count_utf16_units_as_lsp_requires(tmp_path):
    (tmp_path / ".git").mkdir()
    # U+1D53C takes two UTF-16 units: the backward starts at code point 13, UTF-16 unit 14.
    text = BUGGY.replace("    loss.backward()", '    s = "\U0001d53c"; loss.backward()')

    async def scenario() -> list[types.Diagnostic]:
        session = Session()
        await session.start(tmp_path)
        try:
            return await session.diagnostics(_open(session, tmp_path / "wide.py", text))
        finally:
            await session.stop()

    found = [d for d in asyncio.run(scenario()) if d.code == "ACC001"]
    assert [(d.range.start.line, d.range.start.character, d.range.end.character) for d in found] == [(2, 14, 29)]
