"""`python -m hatkit ...` (what `accelerate launch -m hatkit train ...` runs on every process)."""

from .cli import main

if __name__ == "__main__":
    main()
