-- codeasst over LSP for Neovim 0.7 to 0.11: the suggestion comes as one item of the completion menu.
-- Put this in your init.lua, or in a file it requires. It uses only APIs that Neovim 0.7 has.
-- Keys: <C-x><C-o> in insert mode asks for the suggestion, <C-y> takes it, <leader>ca lists the fixes.
-- On Neovim 0.12, use neovim-0.12.lua instead: it shows suggestions as grey text.

local filetypes = { 'python', 'typescript', 'typescriptreact', 'javascript', 'javascriptreact', 'go' }
local clients = {} -- repository root -> client id: one server per repository
local asked = nil -- the line as it was when the menu was asked for: the text the item's edit is for

-- Before 0.11, Neovim's menu puts an item's text at the cursor as one line (a line break comes out
-- as ^@), keeps what its edit would replace, and never runs the item's command. So the line is put
-- back as it was, the edit codeasst sent is applied, and the command runs: it reports the accept.
function CodeasstOmnifunc(findstart, base)
  if findstart == 1 then
    asked = { row = vim.fn.line('.') - 1, text = vim.api.nvim_get_current_line() }
  end
  return vim.lsp.omnifunc(findstart, base)
end

local function take_suggestion(client, bufnr)
  local done = vim.v.completed_item
  local data = type(done.user_data) == 'table' and done.user_data.nvim
  local item = data and data.lsp and data.lsp.completion_item
  if not (asked and item and item.textEdit and item.command and item.command.command == 'codeasst.accept') then
    return
  end
  local row, text = asked.row, asked.text
  vim.schedule(function() -- after the key that closed the menu is handled
    vim.api.nvim_buf_set_lines(bufnr, row, row + 1, false, { text })
    vim.lsp.util.apply_text_edits({ item.textEdit }, bufnr, client.offset_encoding)
    local start = item.textEdit.range.start.character
    if client.offset_encoding ~= 'utf-8' then
      start = vim.str_byteindex(text, start, client.offset_encoding == 'utf-16')
    end
    local lines = vim.split(item.textEdit.newText, '\n')
    vim.api.nvim_win_set_cursor(0, { row + #lines, (#lines == 1 and start or 0) + #lines[#lines] })
    client.request('workspace/executeCommand', item.command, function() end, bufnr)
  end)
end

-- Runs for each buffer once the server has started and attached to it.
local function on_attach(client, bufnr)
  vim.keymap.set('n', '<leader>ca', vim.lsp.buf.code_action, { buffer = bufnr, desc = 'codeasst: fixes' })
  if vim.lsp.completion then
    -- Neovim 0.11: its completion module applies the whole edit and runs the command on <C-y>.
    vim.bo[bufnr].omnifunc = 'v:lua.vim.lsp.omnifunc'
    vim.lsp.completion.enable(true, client.id, bufnr)
  else
    vim.bo[bufnr].omnifunc = 'v:lua.CodeasstOmnifunc'
    vim.api.nvim_create_autocmd('CompleteDone', {
      buffer = bufnr,
      callback = function()
        take_suggestion(client, bufnr)
      end,
    })
  end
end

local function repository_root(path)
  local dir = vim.fn.fnamemodify(path, ':p:h')
  local out = vim.fn.systemlist({ 'git', '-C', dir, 'rev-parse', '--show-toplevel' })
  if vim.v.shell_error ~= 0 or not out[1] then
    return nil
  end
  return out[1]
end

vim.api.nvim_create_autocmd('FileType', {
  pattern = filetypes,
  desc = 'codeasst: attach the language server',
  callback = function(args)
    local path = vim.api.nvim_buf_get_name(args.buf)
    local root = path ~= '' and repository_root(path)
    if not root then
      return -- codeasst answers for files inside a repository only
    end
    local id = clients[root]
    if not (id and vim.lsp.get_client_by_id(id)) then
      id = vim.lsp.start_client({
        name = 'codeasst',
        cmd = { 'codeasst', 'lsp' },
        root_dir = root, -- the folder Neovim tells the server it opens: codeasst answers for that repository
        init_options = { completion = 'completion' },
        on_attach = on_attach,
      })
      clients[root] = id
    end
    if id then
      vim.lsp.buf_attach_client(args.buf, id)
    end
  end,
})
