"""Models of the papers: pure functions of protocol parameters (no measurement)."""
