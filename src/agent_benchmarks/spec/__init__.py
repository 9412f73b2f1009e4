"""What a run is before it runs: the run spec and its command-line flags, the suite
registry, datasets and task selection, prompts and answers, attachments, provenance."""
