"""`codeasst lsp` in a real editor: Neovim 0.7 (Debian's), headless, through its built-in LSP client
as a user configures it. flake8 diagnostics arrive on open, the omnifunc (Ctrl-X Ctrl-O) shows the
model's suggestion, and "codeasst: fix the file" picked in `vim.lsp.buf.code_action()` is applied by
the editor's own code and saved by `:write`. Neovim 0.7 declares codeAction resolveSupport, so the
edit comes in the codeAction/resolve answer; with that capability taken away, the action carries the
command codeasst.fixFile and the edit comes as workspace/applyEdit, the path of clients without it.

CI installs nvim via `make test`; where it is missing, or older than the 0.7 this test drives (its
Lua API: vim.lsp.start_client, vim.diagnostic), the test is skipped, and the skip names the version found.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import run_cli

pytestmark = pytest.mark.slow

TESTED = (0, 7)  # the oldest Neovim this test drives: Debian 12's 0.7.2

MODULE = '''\
def add(a, b):
    """Return the sum of a and b."""
    return a + b


def is_even(n):
    """Return True when n is even."""
    

print(add(1,2), is_even(4))
'''
BODY_LINE = 8  # the empty, indented line of is_even's body: where the completion is asked
PLANTED = "E231"  # missing whitespace after ',': the mechanical fixer's, no model needed

# Neovim runs this as a user would act: what it saw goes to $E2E_OUT as JSON, with "error" and the
# stage it was in when something failed, so the test reports that rather than a timeout.
SCRIPT = r'''
local file, out = vim.env.E2E_FILE, vim.env.E2E_OUT
local body_line = tonumber(vim.env.E2E_BODY_LINE)
local result = {stage = "start", diagnostics = {}, messages = {}, edits = {}, commands = {}, completion_tries = 0}
local client

local function finish(err)
  if err then result.error = err end
  local f = assert(io.open(out, "w"))
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd("qa!")
end

local function guarded(stage, fn)
  return function()
    result.stage = stage
    local ok, err = xpcall(fn, debug.traceback)
    if not ok then finish(err) end
  end
end

-- A wait that ends early, as a failure, when the server's process has gone.
local function wait(ms, what, cond)
  vim.wait(ms, function() return cond() or client.is_stopped() end, 100)
  if not cond() then
    error(client.is_stopped() and string.format("no %s: the server exited", what)
          or string.format("no %s after %d s", what, ms / 1000))
  end
end

local function keys(text)
  return vim.api.nvim_replace_termcodes(text, true, false, true)
end

-- The built-in handlers do the work; these only note what the server sent and what they answered.
local function observe(method, note)
  local builtin = vim.lsp.handlers[method]
  vim.lsp.handlers[method] = function(err, params, ctx, config)
    local answer = builtin(err, params, ctx, config)
    note(err, params, answer)
    return answer
  end
end
observe("window/showMessage", function(_, params) table.insert(result.messages, params.message) end)
observe("workspace/applyEdit", function(_, params, answer)
  table.insert(result.edits, {label = params.label, applied = answer.applied, reason = answer.failureReason})
end)
observe("workspace/executeCommand", function(err, params)
  table.insert(result.commands, err and {error = err.message} or params)
end)

local function fix_the_file()
  result.body_after_accept = vim.api.nvim_buf_get_lines(0, body_line - 1, body_line, true)[1]
  local planted
  for _, d in ipairs(vim.diagnostic.get(0)) do
    if d.code == vim.env.E2E_PLANTED then planted = d end
  end
  assert(planted, "no " .. vim.env.E2E_PLANTED .. " among the diagnostics")
  vim.api.nvim_win_set_cursor(0, {planted.lnum + 1, planted.col})
  -- The picker a user would see: take "codeasst: fix the file" from it.
  vim.ui.select = function(items, opts, on_choice)
    local chosen
    result.actions = {}
    for _, item in ipairs(items) do
      local title = opts.format_item(item)
      table.insert(result.actions, title)
      if title == "codeasst: fix the file" then chosen = item end
    end
    on_choice(chosen)
  end
  local tick = vim.api.nvim_buf_get_changedtick(0)
  vim.lsp.buf.code_action()
  if vim.env.E2E_RESOLVE == "1" then
    -- the server shows a message only where it has no edit to give
    wait(120000, "edit from codeAction/resolve", function()
      return vim.api.nvim_buf_get_changedtick(0) ~= tick or #result.messages > 0
    end)
    assert(vim.api.nvim_buf_get_changedtick(0) ~= tick, "no edit: " .. vim.inspect(result.messages))
  else
    wait(120000, "answer to codeasst.fixFile", function() return #result.commands > 0 end)
  end
  vim.cmd("write")
  result.text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, true), "\n") .. "\n"
  client.stop()
  vim.wait(30000, client.is_stopped, 100)
  result.stopped = client.is_stopped()
  finish()
end

local function omnifunc()
  vim.api.nvim_win_set_cursor(0, {body_line, 0})
  local timer = vim.loop.new_timer()
  local polls = 0
  timer:start(100, 100, vim.schedule_wrap(guarded("omnifunc", function()
    polls = polls + 1
    local info = vim.fn.complete_info({"mode", "pum_visible", "items"})
    if #info.items == 0 then
      if polls > 900 then
        timer:stop()
        error("Ctrl-X Ctrl-O showed nothing in 90 s (mode: " .. vim.fn.mode(1) .. ")")
      end
      return
    end
    timer:stop()
    timer:close()
    result.omnifunc = {mode = info.mode, pum_visible = info.pum_visible,
                       words = vim.tbl_map(function(item) return item.word end, info.items)}
    vim.api.nvim_create_autocmd("InsertLeave", {once = true, callback = function()
      vim.schedule(guarded("fix the file", fix_the_file))
    end})
    vim.api.nvim_feedkeys(keys("<C-y><Esc>"), "n", false)
  end)))
  -- Append at the end of the body line and ask for omni completion, as a user types it.
  vim.api.nvim_feedkeys(keys("A<C-x><C-o>"), "n", false)
end

guarded("attach", function()
  vim.o.completeopt = "menuone,noinsert"  -- as LSP users set it: one item shows, Ctrl-Y takes it
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  vim.bo.omnifunc = "v:lua.vim.lsp.omnifunc"
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  if vim.env.E2E_RESOLVE ~= "1" then capabilities.textDocument.codeAction.resolveSupport = nil end
  local id = vim.lsp.start_client({name = "codeasst", cmd = {vim.env.E2E_PYTHON, "-m", "codeasst", "lsp"},
                                   root_dir = vim.env.E2E_REPO, cmd_cwd = vim.env.E2E_REPO,
                                   capabilities = capabilities})
  assert(id, "vim.lsp.start_client returned nil")
  client = vim.lsp.get_client_by_id(id)
  assert(vim.lsp.buf_attach_client(0, id), "vim.lsp.buf_attach_client failed")

  result.stage = "diagnostics"
  wait(60000, "diagnostics", function() return #vim.diagnostic.get(0) > 0 end)
  for _, d in ipairs(vim.diagnostic.get(0)) do
    table.insert(result.diagnostics, {line = d.lnum + 1, col = d.col + 1, source = d.source, code = d.code,
                                      message = d.message})
  end

  -- The server answers empty until its `codeasst serve` has loaded the model: ask until it does.
  result.stage = "completion"
  local params = {textDocument = vim.lsp.util.make_text_document_params(),
                  position = {line = body_line - 1, character = 4}}
  local items = {}
  local deadline = vim.loop.now() + 120000
  while #items == 0 and vim.loop.now() < deadline and not client.is_stopped() do
    local answers, err = vim.lsp.buf_request_sync(0, "textDocument/completion", params, 60000)
    assert(answers, "textDocument/completion: " .. tostring(err))
    local answer = answers[id] or {}
    assert(not answer.err, "textDocument/completion: " .. vim.inspect(answer.err))
    local list = answer.result
    items = type(list) == "table" and (list.items or list) or {}
    result.completion_tries = result.completion_tries + 1
    if #items == 0 then vim.wait(1000) end
  end
  result.completion = items
  assert(#items > 0, "no completion in 120 s")
  omnifunc()
end)()
'''


@pytest.fixture
def nvim() -> str:
    """The nvim to drive; the test is skipped, saying why, where there is none or it is older than TESTED."""
    found = shutil.which("nvim")
    if found is None:
        pytest.skip("nvim is not installed (CI installs it via `make test`)")
    try:
        printed = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"`{found} --version` failed: {exc}")
    first = printed.splitlines()[0] if printed.strip() else "nothing"
    version = re.match(r"NVIM v(\d+)\.(\d+)", first)
    if version is None:
        pytest.skip(f"`{found} --version` printed {first!r}, not Neovim's version")
    if (int(version[1]), int(version[2])) < TESTED:
        pytest.skip(f"{found} is {first}, older than the Neovim {TESTED[0]}.{TESTED[1]} this test drives")
    return found


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else f"({path}: none)"


@pytest.mark.parametrize("resolve", [True, False], ids=["resolve", "command"])
def test_neovim_gets_diagnostics_a_completion_and_the_file_fixed(nvim, make_repo, tmp_path, codeasst_home, resolve):
    repo = make_repo({"calc.py": MODULE})
    out = tmp_path / "nvim-result.json"
    script = tmp_path / "e2e.lua"
    script.write_text(SCRIPT)
    editor_home = tmp_path / "nvim-home"  # Neovim's own files (its lsp.log among them) stay here
    env = {**os.environ, "E2E_PYTHON": sys.executable, "E2E_REPO": str(repo), "E2E_FILE": str(repo / "calc.py"),
           "E2E_OUT": str(out), "E2E_BODY_LINE": str(BODY_LINE), "E2E_PLANTED": PLANTED,
           "E2E_RESOLVE": "1" if resolve else "0",
           **{name: str(editor_home / name) for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
                                                         "XDG_STATE_HOME")}}
    editor = subprocess.Popen([nvim, "--headless", "--clean", "-u", "NONE", "-i", "NONE", "-c", f"luafile {script}"],
                              cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        screen, _ = editor.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        editor.kill()
        screen, _ = editor.communicate()
    logs = (f"nvim's output:\n{screen}\nnvim's lsp.log (the server's stderr):\n"
            f"{_tail(editor_home / 'XDG_CACHE_HOME' / 'nvim' / 'lsp.log')}\n"
            + "\n".join(f"{log}:\n{_tail(log)}" for log in codeasst_home.rglob("lsp-serve.log")))
    assert out.exists(), f"nvim ended (rc {editor.returncode}) without its results\n{logs}"
    result = json.loads(out.read_text())
    assert "error" not in result, f"at stage {result['stage']}: {result['error']}\n{result}\n{logs}"

    # flake8's findings, the planted one among them, arrived as the editor's diagnostics
    assert {d["source"] for d in result["diagnostics"]} == {"flake8"}, result["diagnostics"]
    assert any(d["code"] == PLANTED and d["line"] == 10 for d in result["diagnostics"]), result["diagnostics"]

    # one item whose edit is the suggestion; the omnifunc showed it and Ctrl-Y put it in the buffer
    (item,) = result["completion"]
    suggestion = item["textEdit"]["newText"]
    assert suggestion.strip() and item["command"]["command"] == "codeasst.accept", item
    assert result["omnifunc"]["words"] == [suggestion], result["omnifunc"]
    assert result["body_after_accept"] == "    " + suggestion, result["body_after_accept"]

    # "fix the file" was offered beside the planted finding's quick fix, and its edit reached the buffer
    assert result["actions"] == [f"codeasst: fix {PLANTED} here", "codeasst: fix the file"], result["actions"]
    if resolve:
        assert result["commands"] == [] and result["edits"] == [] and result["messages"] == [], result
    else:
        # 0.7 sends codeAction/resolve for any action without an edit; the server leaves a command action as it is
        assert result["commands"] == [{"applied": True, "reason": ""}] and result["messages"] == [], result
        assert [edit["applied"] for edit in result["edits"]] == [True], result
    saved = (repo / "calc.py").read_text()
    assert saved == result["text"]
    ast.parse(saved)
    assert "add(1, 2)" in saved and suggestion in saved
    lint = subprocess.run([sys.executable, "-m", "flake8", "calc.py"], cwd=repo, capture_output=True, text=True,
                          check=False)
    assert PLANTED not in lint.stdout, lint.stdout

    # shutdown stopped the `codeasst serve` the server had started
    assert result["stopped"]
    assert run_cli("serve", "--info", "--json", cwd=repo, check_rc=1, timeout=60).returncode == 1
