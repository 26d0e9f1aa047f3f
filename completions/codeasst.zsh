
#compdef codeasst

_codeasst_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _CODEASST_COMPLETE=complete_zsh codeasst)
}

compdef _codeasst_completion codeasst

