-- A thin Neovim client for `codeasst serve`: all logic stays in the server.
-- Put this file on your runtimepath (e.g. ~/.config/nvim/lua/codeasst.lua) and call
--   require("codeasst").setup()
-- It asks `codeasst serve --info --json` (in Neovim's working directory) for the running server's
-- address and token, which the server keeps in a file only you can read; setup({ url = ..., token = ... })
-- sets them by hand instead. In insert mode, <C-l> asks for a suggestion (virtual text), <Tab> accepts it.
local M = { url = nil, token = nil, headers = nil }
local ns = vim.api.nvim_create_namespace("codeasst")
local shown = nil -- { id, text, row, col }

-- The running server for the repository around Neovim's working directory, from its discovery record.
local function discover()
  local out = vim.system({ "codeasst", "serve", "--info", "--json" }, { text = true }):wait()
  if out.code ~= 0 then return false end
  local ok, info = pcall(vim.json.decode, out.stdout)
  if not ok then return false end
  M.url, M.token = info.url, info.token
  return true
end

-- The token goes to curl in a file in Neovim's private temporary folder, not on its command line,
-- where any user's `ps` would show it.
local function headers()
  if not M.headers then
    M.headers = vim.fn.tempname()
    vim.fn.writefile({ "Authorization: Bearer " .. (M.token or ""), "Content-Type: application/json" }, M.headers)
    vim.fn.setfperm(M.headers, "rw-------")
  end
  return M.headers
end

local function post(route, body, on_reply)
  if not M.url and not discover() then return end
  -- --noproxy: the code and the token go to the server, never to an http_proxy.
  local cmd = { "curl", "-s", "--noproxy", "*", "-X", "POST", M.url .. route, "-H", "@" .. headers(),
                "--data-binary", "@-" }
  vim.system(cmd, { stdin = vim.json.encode(body), text = true }, function(out)
    if out.code == 7 then M.url, M.headers = nil, nil end -- the server restarted or stopped: ask again next time
    if out.code == 0 and on_reply then
      local ok, reply = pcall(vim.json.decode, out.stdout)
      if ok then vim.schedule(function() on_reply(reply) end) end
    end
  end)
end

local function clear(kind)
  if shown and kind then post("/v1/events", { kind = kind, id = shown.id, accepted_length = 0 }) end
  vim.api.nvim_buf_clear_namespace(0, ns, 0, -1)
  shown = nil
end

function M.suggest()
  clear("discarded")
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  post("/v1/complete", { path = vim.api.nvim_buf_get_name(0), line = row, col = col + 1, text = text,
                         client = "nvim-" .. vim.fn.getpid() }, function(reply)
    if not reply.text or reply.text == "" then return end
    local lines = vim.split(reply.text, "\n")
    local virt = { virt_text = { { lines[1], "Comment" } }, virt_text_pos = "inline" }
    if #lines > 1 then
      virt.virt_lines = vim.tbl_map(function(l) return { { l, "Comment" } } end, vim.list_slice(lines, 2))
    end
    vim.api.nvim_buf_set_extmark(0, ns, row - 1, col, virt)
    shown = { id = reply.id, text = reply.text, row = row, col = col }
    post("/v1/events", { kind = "shown", id = reply.id, shown_length = #reply.text })
  end)
end

function M.accept()
  if not shown then return false end
  local s = shown
  post("/v1/events", { kind = "accepted", id = s.id, accepted_length = #s.text })
  vim.api.nvim_buf_clear_namespace(0, ns, 0, -1)
  shown = nil
  vim.api.nvim_buf_set_text(0, s.row - 1, s.col, s.row - 1, s.col, vim.split(s.text, "\n"))
  return true
end

function M.setup(opts)
  M.url = opts and opts.url
  M.token = opts and opts.token
  vim.keymap.set("i", "<C-l>", M.suggest, { desc = "codeasst: suggest" })
  vim.keymap.set("i", "<Tab>", function()
    if not M.accept() then vim.api.nvim_feedkeys(vim.keycode("<Tab>"), "n", false) end
  end, { desc = "codeasst: accept the suggestion" })
  vim.api.nvim_create_autocmd({ "InsertLeave", "CursorMovedI" }, { callback = function() clear("discarded") end })
  -- Warm the prompt at the cursor when a file is entered and when insert mode starts.
  vim.api.nvim_create_autocmd({ "BufEnter", "InsertEnter" }, { callback = function(ev)
    if vim.bo[ev.buf].buftype == "" and ev.file ~= "" then
      local row, col = unpack(vim.api.nvim_win_get_cursor(0))
      post("/v1/open", { path = ev.file, line = row, col = col + 1, client = "nvim-" .. vim.fn.getpid(),
                         text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") })
    end
  end })
end

return M
