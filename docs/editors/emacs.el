;;; emacs.el --- codeasst over LSP for Emacs: lsp-mode or eglot  -*- lexical-binding: t -*-

;; Put one of the two blocks below in your init file.  Both clients tell the
;; server the project root they open (lsp-mode's session root, or project.el's,
;; which is git's), and `codeasst lsp' answers for the repository around it.

;;; lsp-mode
;; codeasst runs as an add-on beside the language's own server (pyright, gopls,
;; ...), so both answer in the same buffer.  Start it as usual: M-x lsp, or
;; `lsp-deferred' in the major modes' hooks.
;; Suggestions come as grey text where lsp-mode has lsp-inline-completion.el
;; (builds since December 2024): they appear after `lsp-inline-completion-idle-delay'
;; seconds (2 by default); C-<return> takes one, C-n and C-p switch between them,
;; C-g drops it.  Older lsp-mode (9.0.0 and before) gets the suggestion as a
;; completion item.  Either way, taking it runs its command, which tells codeasst
;; it was accepted.
;; Fixes: M-x lsp-execute-code-action.  Symbols: M-x xref-find-apropos.
(with-eval-after-load 'lsp-mode
  (lsp-register-client
   (make-lsp-client
    :new-connection (lsp-stdio-connection '("codeasst" "lsp"))
    :activation-fn (lsp-activate-on "python" "typescript" "typescriptreact"
                                    "javascript" "go")
    :add-on? t
    :server-id 'codeasst)))

;;; eglot
;; Eglot runs one server per buffer, so in these modes codeasst takes the place
;; of the language's own server.  Eglot asks textDocument/completion: the
;; suggestion is a completion item (M-x completion-at-point, or your completion
;; UI).  Fixes: M-x eglot-code-actions.  Start it with M-x eglot, or `eglot-ensure'
;; in the major modes' hooks.
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '((python-mode python-ts-mode
                  typescript-mode typescript-ts-mode tsx-ts-mode
                  js-mode js-ts-mode
                  go-mode go-ts-mode)
                 . ("codeasst" "lsp"
                    :initializationOptions (:completion "completion")))))

;;; emacs.el ends here
