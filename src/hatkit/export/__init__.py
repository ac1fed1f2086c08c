"""Exporting a trained checkpoint for other runtimes (llama.cpp, Ollama)."""
