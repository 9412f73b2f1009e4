"""The records a run writes and reads: rows, manifests and scores (schema), the
predictions file (storage), upstream's files read as ours, token prices."""
