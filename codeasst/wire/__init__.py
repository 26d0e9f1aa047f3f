"""What a running `codeasst serve` and its clients share, below both `access/` and `serve/`: the HTTP
client (client.py, with `Cancel`), the record that says where a server runs (discovery.py), and the
store of what happened to each suggestion (events.py, read by `codeasst stats`)."""
