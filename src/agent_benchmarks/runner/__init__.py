"""The run engine: attempts, executors, resume, progress."""
