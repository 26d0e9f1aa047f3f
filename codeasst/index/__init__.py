"""The code index: file selection, chunking, the manifest and the vector store."""
