"""A2A Tasks: their messages, artifacts and event log, and the one writer of task state."""
