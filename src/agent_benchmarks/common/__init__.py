"""What every layer shares: input errors, the environment, redaction, loopback addresses."""
