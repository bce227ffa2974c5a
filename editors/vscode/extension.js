// Starts `accumlint server` for Python files; everything else is the language server's work.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("accumlint").get("path", "accumlint");
  client = new LanguageClient(
    "accumlint",
    "accumlint",
    { command, args: ["server"] },
    { documentSelector: [{ scheme: "file", language: "python" }] },
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
