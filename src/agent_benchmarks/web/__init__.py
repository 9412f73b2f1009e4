"""Recorded web: record a run's web traffic into a WARC archive once, replay it for every
stack (``web.proxy`` is the proxy process, ``web.service`` starts it for a run)."""
