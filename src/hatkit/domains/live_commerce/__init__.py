"""Live-stream shopping: a host answers viewers about products."""
