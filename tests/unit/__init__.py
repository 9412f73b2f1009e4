"""Fast tests: no browser, no npm program."""
