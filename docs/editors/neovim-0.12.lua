-- codeasst over LSP for Neovim 0.12 and later: suggestions as grey text after the cursor.
-- Put this in your init.lua, or in a file it requires.
-- Keys: <Tab> takes the suggestion, gra lists the fixes (Neovim's default code-action key),
-- :CodeasstAsk QUESTION shows the checked answer and puts its citations in the quickfix list.

vim.lsp.config('codeasst', {
  cmd = { 'codeasst', 'lsp' },
  filetypes = { 'python', 'typescript', 'typescriptreact', 'javascript', 'javascriptreact', 'go' },
  -- The git root is the folder Neovim tells the server it opens: codeasst answers for that repository.
  root_markers = { '.git' },
  -- Suggestions come as inline completion. With 'completion' they come as a menu item instead,
  -- for vim.lsp.completion or a completion plugin.
  init_options = { completion = 'inline' },
})
vim.lsp.enable('codeasst')

-- Ask for suggestions while typing in insert mode, in every buffer with a server that offers them.
vim.lsp.inline_completion.enable()

-- Taking a suggestion runs its command, which tells codeasst it was accepted.
vim.keymap.set('i', '<Tab>', function()
  if not vim.lsp.inline_completion.get() then
    return '<Tab>'
  end
end, { expr = true, desc = 'codeasst: take the suggestion' })

vim.api.nvim_create_user_command('CodeasstAsk', function(opts)
  local client = vim.lsp.get_clients({ name = 'codeasst', bufnr = 0 })[1]
  if not client then
    return vim.notify('codeasst is not attached to this buffer', vim.log.levels.WARN)
  end
  local params = { command = 'codeasst.ask', arguments = { opts.args } }
  client:request('workspace/executeCommand', params, function(err, answer)
    if err or not answer then
      return vim.notify('codeasst: ' .. (err and err.message or 'no answer'), vim.log.levels.WARN)
    end
    vim.lsp.util.open_floating_preview(vim.split(answer.markdown, '\n'), 'markdown', { border = 'rounded' })
    local items = vim.lsp.util.locations_to_items(answer.locations or {}, client.offset_encoding)
    vim.fn.setqflist({}, ' ', { title = 'codeasst: ' .. opts.args, items = items })
  end)
end, { nargs = '+', desc = 'codeasst: ask a question about the repository' })
