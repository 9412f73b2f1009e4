"""End-to-end tests: they drive the real programs, only the model is scripted."""
