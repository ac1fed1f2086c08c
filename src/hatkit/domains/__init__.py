"""Reference domains: each holds its data, state, default harness and generators."""
