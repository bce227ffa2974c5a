"""`accumlint server`: a language server over stdio (pygls), for VS Code, Neovim and any LSP client.

It publishes diagnostics when a Python document is opened, changed or saved, and offers each
finding's fix as a quick-fix code action (labelled safe or unsafe), plus a `source.fixAll` action
that applies every safe fix. The text is checked by accumlint.runner, the same runner as
`accumlint check`, with the configuration that `check` would use for that path.

LSP positions are 0-based and count UTF-16 code units by default; accumlint's are 1-based code
points. `_position` converts, with the document's own line text.
"""

from __future__ import annotations

import os
import re
from typing import Optional, Sequence
from urllib.parse import unquote, urlparse

import click
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from accumlint import __version__
from accumlint.checking import Mode, Outcome
from accumlint.config import ConfigError, Resolver, Selection
from accumlint.discovery import forced_exclusion
from accumlint.model import FileError, Finding, Location
from accumlint.runner import Task, run

SOURCE = "accumlint"
FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.accumlint"
_AT = re.compile(r"\bat (\d+):(\d+)\b")  # "syntax error at 3:5: ..."


def _path(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def _position(lines: Sequence[str], location: Location) -> types.Position:
    row = max(location.row - 1, 0)
    text = lines[row] if row < len(lines) else ""
    prefix = text[: max(location.column - 1, 0)]
    return types.Position(line=row, character=len(prefix.encode("utf-16-le")) // 2)


def _range(lines: Sequence[str], start: Location, end: Location) -> types.Range:
    return types.Range(start=_position(lines, start), end=_position(lines, end))


class AccumlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("accumlint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)

    def run_document(self, document: TextDocument, mode: Mode) -> Optional[Outcome]:
        """Check (or fix, without writing) the editor's text through the runner; None when the
        configuration excludes the file or cannot be read, or for a notebook's JSON text (cell
        positions would not be the editor's)."""
        path = _path(document.uri)
        if path.lower().endswith(".ipynb"):
            return None
        try:
            resolver = Resolver(cwd=os.path.dirname(path) or None)
            if os.path.isabs(path) and forced_exclusion(path, resolver):
                return None
            select = Selection().codes_for(path, resolver.for_path(path))
        except ConfigError as error:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=str(error)))
            return None
        task = Task(path, select, data=document.source.encode("utf-8"))
        (outcome,) = run([task], mode, jobs=1, caches=None)
        return outcome

    def publish(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        outcome = self.run_document(document, Mode())
        diagnostics = [] if outcome is None else self.diagnostics(document, outcome)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=document.version, diagnostics=diagnostics)
        )

    def diagnostics(self, document: TextDocument, outcome: Outcome) -> list[types.Diagnostic]:
        lines = document.lines
        found = [self.diagnostic(lines, finding) for finding in outcome.result.findings]
        if outcome.result.error is not None:
            found.append(self.error_diagnostic(lines, outcome.result.error))
        return found

    @staticmethod
    def diagnostic(lines: Sequence[str], finding: Finding) -> types.Diagnostic:
        return types.Diagnostic(
            range=_range(lines, finding.location, finding.end_location),
            message=finding.message,
            severity=types.DiagnosticSeverity.Warning,
            code=finding.code,
            code_description=types.CodeDescription(href=finding.url) if finding.url else None,
            source=SOURCE,
        )

    @staticmethod
    def error_diagnostic(lines: Sequence[str], error: FileError) -> types.Diagnostic:
        match = _AT.search(error.message)
        place = Location(int(match.group(1)), int(match.group(2))) if match else Location(1, 1)
        return types.Diagnostic(
            range=_range(lines, place, place), message=error.message,
            severity=types.DiagnosticSeverity.Error, source=SOURCE,
        )

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        document = self.workspace.get_text_document(params.text_document.uri)
        wanted = params.context.only
        actions: list[types.CodeAction] = []
        if not wanted or any(kind.startswith(types.CodeActionKind.QuickFix) for kind in wanted):
            actions += self.quick_fixes(document, params.range)
        if not wanted or any(FIX_ALL_KIND.startswith(kind) for kind in wanted):
            fix_all = self.fix_all(document)
            if fix_all is not None:
                actions.append(fix_all)
        return actions

    def quick_fixes(self, document: TextDocument, wanted: types.Range) -> list[types.CodeAction]:
        outcome = self.run_document(document, Mode(with_edits=True))
        if outcome is None:
            return []
        lines = document.lines
        actions = []
        for finding in outcome.result.findings:
            fix = finding.fix
            if fix is None or not fix.edits:
                continue
            where = _range(lines, finding.location, finding.end_location)
            if where.end.line < wanted.start.line or where.start.line > wanted.end.line:
                continue
            safe = fix.applicability == "safe"
            edits = [types.TextEdit(range=_range(lines, e.location, e.end_location), new_text=e.content)
                     for e in fix.edits]
            actions.append(types.CodeAction(
                title=f"{finding.code}: {fix.message}" + ("" if safe else " (unsafe fix: check the result)"),
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[self.diagnostic(lines, finding)],
                is_preferred=safe,
                edit=types.WorkspaceEdit(changes={document.uri: edits}),
            ))
        return actions

    def fix_all(self, document: TextDocument) -> Optional[types.CodeAction]:
        """Every safe fix at once, as one edit of the whole text (the fixer's own rounds)."""
        outcome = self.run_document(document, Mode(fix=True, write=False))
        if outcome is None or outcome.fixed is None:
            return None
        lines = document.lines
        end = Location(len(lines) + 1, 1)
        whole = types.Range(start=types.Position(line=0, character=0), end=_position(lines, end))
        edit = types.TextEdit(range=whole, new_text=outcome.fixed.decode("utf-8"))
        return types.CodeAction(
            title="accumlint: apply every safe fix", kind=FIX_ALL_KIND,
            edit=types.WorkspaceEdit(changes={document.uri: [edit]}),
        )


def build() -> AccumlintServer:
    server = AccumlintServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AccumlintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AccumlintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AccumlintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AccumlintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND]),
    )
    def code_action(ls: AccumlintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.code_actions(params)

    return server


def serve() -> None:
    build().start_io()


@click.command("server", epilog="\b\nSee the README for VS Code and Neovim setup.")
def server_command() -> None:
    """Run the language server on standard input and output (for editors)."""
    serve()
